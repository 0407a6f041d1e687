// One function per algorithm family, each returning the algorithms it registers; registry.cc
// lists the families. Adding a family touches that one list.
#pragma once

#include <vector>

#include "gloo_lite/algorithms/registry.h"

namespace gloo_lite::algo {

std::vector<Algorithm> ring_algorithms();              // ring.cc
std::vector<Algorithm> halving_doubling_algorithms();  // halving_doubling.cc
std::vector<Algorithm> tree_algorithms();              // tree.cc
std::vector<Algorithm> direct_algorithms();            // direct.cc
std::vector<Algorithm> bruck_algorithms();             // bruck.cc
std::vector<Algorithm> pairwise_algorithms();          // pairwise.cc
std::vector<Algorithm> dissemination_algorithms();     // dissemination.cc
std::vector<Algorithm> shm_algorithms();               // shm/collectives.cc
std::vector<Algorithm> hierarchical_algorithms();      // hierarchical.cc

}  // namespace gloo_lite::algo
