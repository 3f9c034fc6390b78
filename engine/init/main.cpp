// The engine's helper program, run from a sealed memfd. It starts as the
// zygote (one per provider, in the host's namespaces) and every sandbox's
// init is a fork of it: a fresh, single-threaded program of our own, never a
// copy of the multithreaded host, and with no exec per sandbox.

#include "init.hpp"

int main() { return mayura::init::run_zygote(mayura::init::kControlFd); }
