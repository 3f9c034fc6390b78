#pragma once
// Small file operations of the image store, shared by its parts.

#include <map>
#include <optional>
#include <string>

namespace mayura::rootfs::store {

std::string random_name(const char* prefix);
// The whole file, or nothing if it is missing, unreadable or over `max`.
std::optional<std::string> read_small(const std::string& path, std::size_t max);
// Written to a file in `tmp_dir`, synced, renamed over `path`.
void write_atomic(const std::string& tmp_dir, const std::string& path, const std::string& data);
void remove_tree(const std::string& path);
std::map<std::string, std::string> read_refs(const std::string& dir);
void write_refs(const std::string& dir, const std::map<std::string, std::string>& refs);

}  // namespace mayura::rootfs::store
