#pragma once
// Kernel settings under /proc/sys, written as files (never by running
// sysctl). Files under /proc/sys/net belong to the network namespace of the
// thread that opens them.

#include <string>

namespace mayura::netfilter {

// Makes the file hold `value`, writing only if it holds something else.
// false if there is no such file (a feature the kernel lacks, such as IPv6
// when booted without it); throws SandboxError(INTERNAL) on any other
// failure.
bool set_proc_sys(const std::string& path, const std::string& value);

}  // namespace mayura::netfilter
