// The README's example, built and run as a test so it cannot rot.
#include <iostream>
#include <mayura/native.hpp>
#include <mayura/sandbox.hpp>

int main() {
  auto sandboxes =
      mayura::create_sandboxes(mayura::native_sandboxes(), {.max_sandboxes = 4, .max_lifetime_ms = 30 * 60'000});
  auto sandbox = sandboxes.create({.lifetime_ms = 10 * 60'000});
  try {
    sandbox.write_file("index.py", "print(6 * 7)");
    auto result = sandbox.exec({"python3", "index.py"});
    std::cout << *result.exit_code << " " << result.stdout;  // 0 42
  } catch (const mayura::SandboxError& e) {
    std::cerr << mayura::reason_name(e.reason()) << ": " << e.what() << "\n";
  }
  sandbox.release();
}
