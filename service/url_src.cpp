// Boost.URL, compiled into this library from its headers (Debian ships no
// separate library of it for 1.81).
#include <boost/url/src.hpp>
