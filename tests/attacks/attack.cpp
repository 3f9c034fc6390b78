#include "attack.hpp"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "tests/support/exec_load.hpp"

namespace mayura::testing {

const std::string& probe_bytes() {
  static const std::string bytes = read_host(MAYURA_PROBE_PATH);
  return bytes;
}

void install_probe(const Sandbox& sandbox) {
  EXPECT_GT(probe_bytes().size(), 0u) << MAYURA_PROBE_PATH;
  sandbox.write_file("/workspace/probe", probe_bytes());
  const ExecResult r = sandbox.exec({"/bin/sh", "-c", "chmod 755 /workspace/probe"});
  EXPECT_EQ(r.exit_code, 0) << r.stderr;
}

std::map<std::string, std::string> parse_results(const std::string& out) {
  std::map<std::string, std::string> m;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) m[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return m;
}

std::map<std::string, std::string> probe(const Sandbox& sandbox, const std::vector<std::string>& args,
                                         const ExecOptions& options) {
  std::vector<std::string> argv = {"/workspace/probe"};
  argv.insert(argv.end(), args.begin(), args.end());
  const ExecResult r = sandbox.exec(argv, options);
  EXPECT_EQ(r.exit_code, 0) << "probe " << (args.empty() ? "" : args[0]) << "\nstdout: " << r.stdout
                            << "\nstderr: " << r.stderr;
  return parse_results(r.stdout);
}

long memory_mib() { return static_cast<long>(load::status_kib_of(::getpid(), "VmRSS") / 1024); }
long peak_memory_mib() { return static_cast<long>(load::status_kib_of(::getpid(), "VmHWM") / 1024); }
void reset_peak_memory() { std::ofstream("/proc/self/clear_refs") << "5"; }

}  // namespace mayura::testing
