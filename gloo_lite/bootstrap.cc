#include "gloo_lite/bootstrap.h"
