// Asio's TLS layer, compiled once (as sandbox/asio.cpp compiles the rest of
// Asio), here where OpenSSL is linked.
#include <boost/asio/ssl/impl/src.hpp>
