#pragma once
// Image names as users write them: NAME[:TAG], where NAME may carry a
// registry host (`registry.example:5000/team/app`). Docker Hub's implied
// prefixes are dropped, so `docker.io/library/alpine` and `alpine` are the
// same image. Digest references (`@sha256:…`) are not names.

#include <optional>
#include <string>
#include <string_view>

namespace mayura::rootfs {

struct ImageReference {
  std::string name;  // normalized, without a tag
  std::string tag = "latest";

  std::string str() const { return name + ":" + tag; }
  bool operator==(const ImageReference&) const = default;
};

// The reference, or nothing if `text` is not one (then `why` says what is wrong).
std::optional<ImageReference> parse_image_reference(std::string_view text, std::string* why = nullptr);

}  // namespace mayura::rootfs
