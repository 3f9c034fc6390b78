# Included by ctest after the discovered tests (TEST_INCLUDE_FILES, in
# order), so it can set properties on tests that gtest_discover_tests names
# only at build time.
#
# The cpu-quota test runs alone. On Debian 12's kernel (6.1) a task over its
# quota is taken off the cpu wherever it is, even holding a kernel lock
# (cgroup_threadgroup_rwsem in a fork, which every cgroup.procs write and so
# every other fork then queues behind) until its next period. Twice, in the
# VMs' emulated cpu, beside a daemon's 500 execs at once, every test stalled
# for ten minutes and not even ctest's timeout fired.
set_tests_properties(integration.LimitsTest.TheCpuQuotaThrottlesABusyCommand PROPERTIES RUN_SERIAL TRUE)
