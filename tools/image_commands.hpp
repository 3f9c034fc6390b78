#pragma once
// mayura-run image import|list|inspect|rm: the image store from the shell.

namespace mayura::tools {

// argv[0] is "image". Returns the exit status.
int run_image_command(int argc, char** argv);

}  // namespace mayura::tools
