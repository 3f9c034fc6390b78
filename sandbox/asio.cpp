// Asio's own implementation (its scheduler, reactor, sockets' system
// calls), compiled once here instead of in each of the hundred units that
// use Asio: BOOST_ASIO_SEPARATE_COMPILATION, which this library's CMake
// target sets for every unit that links it (the package's users too). Each
// of those units compiled the same code again, some two seconds apiece.
#include <boost/asio/impl/src.hpp>
