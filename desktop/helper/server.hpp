#pragma once
// The desktop's X server: Xvfb from the image, on display :0.

namespace mayura::desktop {

// Starts Xvfb at width x height (24-bit colour, no TCP listener) in a
// session of its own with no standard streams, and returns once it takes
// connections: it then outlives the helper, as the sandbox's. A Failure
// (kNoServer) when the image has no Xvfb, (kFailed) when it ends or does not
// answer within 20 s.
void start_server(long width, long height);

}  // namespace mayura::desktop
