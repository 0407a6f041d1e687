#include "transport_tcp/interfaces.h"
