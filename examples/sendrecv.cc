// The quick-start example: every rank passes a message around a ring and prints what it did.
//   gloo_lite_run -n 4 -- ./sendrecv
#include <cstdio>
#include <string>
#include <vector>

#include "gloo_lite/base/error.h"
#include "gloo_lite/bootstrap.h"

int main() {
  try {
    auto context = gloo_lite::init_from_env();
    int rank = context->rank();
    int size = context->size();
    int right = (rank + 1) % size;
    int left = (rank + size - 1) % size;

    // A small message goes eagerly, a 4 MiB one by rendezvous straight into the buffer.
    std::string greeting = "hello from rank " + std::to_string(rank);
    std::vector<char> received(64, '\0');
    std::vector<float> big(1 << 20, static_cast<float>(rank));
    std::vector<float> big_in(big.size());

    // Posted together and waited for together: every rank sends before it waits, so that no
    // send waits for a receive that its peer has not posted yet.
    // The receiver must know the size: greetings differ in length only past rank 9.
    size_t left_bytes = ("hello from rank " + std::to_string(left)).size();
    std::vector<gloo_lite::Work> transfers;
    transfers.push_back(context->isend(right, greeting.data(), greeting.size(), 1));
    transfers.push_back(context->irecv(left, received.data(), left_bytes, 1));
    transfers.push_back(context->isend(right, big.data(), big.size() * sizeof(float), 2));
    transfers.push_back(context->irecv(left, big_in.data(), big_in.size() * sizeof(float), 2));
    for (gloo_lite::Work& transfer : transfers) transfer.wait();

    bool ok =
        big_in.front() == static_cast<float>(left) && big_in.back() == static_cast<float>(left);
    std::printf(
        "rank %d of %d: sent \"%s\" to rank %d, received \"%s\" from rank %d, "
        "and 4 MiB from rank %d (%s)\n",
        rank, size, greeting.c_str(), right, received.data(), left, left,
        ok ? "verified" : "WRONG");
    return ok ? 0 : 1;
  } catch (const gloo_lite::Error& e) {
    std::fprintf(stderr, "sendrecv: %s\n", e.what());
    return 1;
  }
}
