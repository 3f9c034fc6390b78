#pragma once
// Everything of the contract: include this one header.
#include "mayura/errors.hpp"
#include "mayura/tools.hpp"
#include "mayura/provider.hpp"
#include "mayura/sandboxes.hpp"
#include "mayura/types.hpp"
#include "mayura/validate.hpp"
