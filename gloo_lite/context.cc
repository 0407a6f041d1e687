#include "gloo_lite/context.h"
