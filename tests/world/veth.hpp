#pragma once
// A veth pair between two network namespaces, made and configured over
// netlink (libnl-route): never by running `ip`.

#include <string>
#include <vector>

namespace mayura::testing {

struct VethEnd {
  int netns = -1;  // where this end lives (the caller keeps the fd)
  std::string name;
  std::vector<std::string> addresses;  // IPv4, "a.b.c.d/len"; the first one primary
  std::string gateway;                 // a default route via this address; "" for none
};

class VethPair {
 public:
  // Makes the pair, brings both ends up, adds the addresses and routes.
  // Throws std::runtime_error naming the step; leaves nothing behind then.
  VethPair(VethEnd a, VethEnd b);
  // Deletes the pair (deleting one end deletes both).
  ~VethPair();
  VethPair(const VethPair&) = delete;
  VethPair& operator=(const VethPair&) = delete;

 private:
  VethEnd a_, b_;
};

}  // namespace mayura::testing
