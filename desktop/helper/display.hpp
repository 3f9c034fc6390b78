#pragma once
// The X display the desktop helper acts on: one xcb connection to $DISPLAY,
// its first screen, and the XTEST extension every input action needs. The
// helper runs inside the sandbox, as its user: whatever the sandbox's X
// server sends is read here, never in the engine.

#include <xcb/xcb.h>

#include <string>

namespace mayura::desktop {

// How the helper ends: its exit code tells the engine which kind of failure
// it was; the message goes to stderr.
enum Exit : int {
  kOk = 0,
  kFailed = 1,     // the server refused or broke off a request
  kBadInput = 2,   // the request is wrong: outside the screen, no such key
  kNoDisplay = 3,  // no X server answers on $DISPLAY
  kNoServer = 4,   // start: the image has no Xvfb
};

struct Failure {
  Exit code;
  std::string message;
};

class Display {
 public:
  // Connects to $DISPLAY; a Failure (kNoDisplay) if nothing answers.
  Display();
  ~Display();
  Display(const Display&) = delete;
  Display& operator=(const Display&) = delete;

  xcb_connection_t* connection() const { return connection_; }
  xcb_window_t root() const { return screen_->root; }
  int width() const { return screen_->width_in_pixels; }
  int height() const { return screen_->height_in_pixels; }
  const xcb_screen_t& screen() const { return *screen_; }

  // A Failure (kFailed) if the server has no XTEST.
  void require_xtest() const;
  // A round trip: every request sent before it has been carried out (and
  // its events delivered) when it returns. A Failure if the server is gone.
  void sync() const;
  // A Failure (kBadInput) unless (x, y) is on the screen.
  void check_point(long x, long y) const;

 private:
  xcb_connection_t* connection_ = nullptr;
  xcb_screen_t* screen_ = nullptr;
};

}  // namespace mayura::desktop
