#include "rendezvous/store.h"
