#include "protocol.hpp"

#include "wire.hpp"

namespace mayura::protocol {
namespace {

void put_op(wire::Writer& w, const rootfs::Op& op) {
  w.u32(static_cast<std::uint32_t>(op.kind));
  w.u32(op.flags);
  w.str(op.src);
  w.str(op.dst);
  w.str(op.data);
  w.u32(op.mode);
  w.u32(op.uid);
  w.u32(op.gid);
  w.u64(op.size);
  w.u64(op.inodes);
}

rootfs::Op get_op(wire::Reader& r) {
  rootfs::Op op;
  op.kind = static_cast<rootfs::OpKind>(r.u32());
  op.flags = r.u32();
  op.src = r.str();
  op.dst = r.str();
  op.data = r.str();
  op.mode = r.u32();
  op.uid = r.u32();
  op.gid = r.u32();
  op.size = r.u64();
  op.inodes = r.u64();
  return op;
}

}  // namespace

Request kind_of(const std::string& bytes) {
  wire::Reader r(bytes.data(), bytes.size());
  return static_cast<Request>(r.u32());
}

std::string encode(const Config& c) {
  wire::Writer w;
  w.u32(static_cast<std::uint32_t>(Request::config));
  w.u32(static_cast<std::uint32_t>(c.plan.size()));
  for (const auto& op : c.plan) put_op(w, op);
  w.str(c.hostname);
  w.str(c.workdir);
  w.u32(c.uid);
  w.u32(c.gid);
  w.strings(c.seccomp);
  return w.bytes();
}

std::string encode_standby(bool now) {
  wire::Writer w;
  w.u32(static_cast<std::uint32_t>(Request::standby));
  w.u32(now ? 1 : 0);
  return w.bytes();
}

bool decode_standby(const std::string& bytes, bool& now) {
  wire::Reader r(bytes.data(), bytes.size());
  if (static_cast<Request>(r.u32()) != Request::standby) return false;
  const std::uint32_t flag = r.u32();
  if (!r.ok() || flag > 1 || !r.at_end()) return false;
  now = flag == 1;
  return true;
}

std::string encode_keep(std::int64_t deadline_ms) {
  wire::Writer w;
  w.u32(static_cast<std::uint32_t>(Request::keep));
  w.u64(static_cast<std::uint64_t>(deadline_ms));
  return w.bytes();
}

std::string encode_signal(std::int32_t pid, std::int32_t signal) {
  wire::Writer w;
  w.u32(static_cast<std::uint32_t>(Request::signal));
  w.u32(static_cast<std::uint32_t>(pid));
  w.u32(static_cast<std::uint32_t>(signal));
  return w.bytes();
}

bool decode_signal(const std::string& bytes, std::int32_t& pid, std::int32_t& signal) {
  wire::Reader r(bytes.data(), bytes.size());
  if (static_cast<Request>(r.u32()) != Request::signal) return false;
  pid = static_cast<std::int32_t>(r.u32());
  signal = static_cast<std::int32_t>(r.u32());
  return r.ok() && r.at_end() && pid > 1 && signal > 0 && signal < 65;
}

bool decode_keep(const std::string& bytes, std::int64_t& deadline_ms) {
  wire::Reader r(bytes.data(), bytes.size());
  if (static_cast<Request>(r.u32()) != Request::keep) return false;
  deadline_ms = static_cast<std::int64_t>(r.u64());
  return r.ok() && r.at_end() && deadline_ms >= 0;
}

bool decode(const std::string& bytes, Config& out) {
  wire::Reader r(bytes.data(), bytes.size());
  if (static_cast<Request>(r.u32()) != Request::config) return false;
  const std::uint32_t n = r.u32();
  if (n > 4096) return false;
  for (std::uint32_t i = 0; i < n && r.ok(); ++i) out.plan.push_back(get_op(r));
  out.hostname = r.str();
  out.workdir = r.str();
  out.uid = r.u32();
  out.gid = r.u32();
  out.seccomp = r.strings();
  if (out.seccomp.size() > 4) return false;
  for (const auto& program : out.seccomp) {
    if (program.empty() || program.size() % 8 != 0) return false;
  }
  return r.ok() && r.at_end();
}

std::string encode(const Exec& e) {
  wire::Writer w;
  w.u32(static_cast<std::uint32_t>(Request::exec));
  w.strings(e.argv);
  w.strings(e.env);
  w.str(e.cwd);
  // Flags; a plain command's are those an init before terminals knew.
  w.u32((e.program_fd ? 1U : 0U) | (e.terminal ? 2U : 0U) | (e.report_pid ? 4U : 0U));
  return w.bytes();
}

bool decode(const std::string& bytes, Exec& out) {
  wire::Reader r(bytes.data(), bytes.size());
  if (static_cast<Request>(r.u32()) != Request::exec) return false;
  out.argv = r.strings();
  out.env = r.strings();
  out.cwd = r.str();
  const std::uint32_t flags = r.u32();
  out.program_fd = (flags & 1U) != 0;
  out.terminal = (flags & 2U) != 0;
  out.report_pid = (flags & 4U) != 0;
  return r.ok() && r.at_end() && !out.argv.empty() && flags <= 7;
}

std::string encode(Request kind, const FileRequest& f) {
  wire::Writer w;
  w.u32(static_cast<std::uint32_t>(kind));
  w.str(f.path);
  w.u64(f.max_bytes);
  return w.bytes();
}

bool decode(const std::string& bytes, FileRequest& out) {
  wire::Reader r(bytes.data(), bytes.size());
  r.u32();
  out.path = r.str();
  out.max_bytes = r.u64();
  return r.ok() && r.at_end() && !out.path.empty() && out.path.front() == '/';
}

std::string encode(const ListEntry& e) {
  wire::Writer w;
  w.u32(e.type);
  w.u32(e.mode);
  w.u64(e.size);
  w.u64(static_cast<std::uint64_t>(e.mtime_ms));
  w.str(e.name);
  return w.bytes();
}

bool decode_listing(const std::string& bytes, std::vector<ListEntry>& out) {
  wire::Reader r(bytes.data(), bytes.size());
  while (!r.at_end()) {
    ListEntry e;
    e.type = r.u32();
    e.mode = r.u32();
    e.size = r.u64();
    e.mtime_ms = static_cast<std::int64_t>(r.u64());
    e.name = r.str();
    if (!r.ok()) return false;
    out.push_back(std::move(e));
  }
  return true;
}

}  // namespace mayura::protocol
