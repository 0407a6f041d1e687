#include "gloo_lite/collective_failure.h"

#include "gloo_lite/base/error.h"
#include "gloo_lite/hang_report.h"
#include "gloo_lite/transport/abort_cause.h"

namespace gloo_lite {

void fail_collective(const FailedCall& call, std::exception_ptr error) {
  ContextEngine& context = *call.context;
  const std::string on_rank =
      " on rank " + std::to_string(context.rank()) + " of " + std::to_string(context.size());
  // The cause first (messages get cut), the call's details after it.
  const std::string where = call.what + " failed" + on_rank;
  const std::string details = " (call: " + call.arguments + ")";
  try {
    std::rethrow_exception(error);
  } catch (const TimeoutError& e) {
    // The budget starts now, at the deadline (kAfterTimeoutBudget).
    const Deadline budget = Deadline::after(kAfterTimeoutBudget);
    HangVerdict verdict = exchange_hang_reports(
        context, call.tag, call.sequence, call.what, hang_report_grace(call.timeout),
        Deadline::after(kAfterTimeoutBudget - kAfterTimeoutTail));
    std::string message = call.what + " timed out" + on_rank + " after " + format_ms(call.timeout) +
                          ": " + verdict.text() + details + "; " + context.describe() + " [" +
                          e.what() + "]";
    context.fail(message, verdict.culprits(), /*tell_peers=*/true, budget);
    throw TimeoutError(message);
  } catch (const transport::RelayedAbort& e) {
    // Another rank's abort read in a host segment: the mesh's peers (other hosts, in a
    // hierarchical call) learn it as that rank's cause, not as this rank's message about it.
    std::string message = where + ": " + e.what() + details;
    const bool tell = !context.mesh_failed();
    context.fail(message, {}, /*tell_peers=*/false);
    if (tell) context.relay_to_peers(e.cause(), transport::ErrorKind::kConnection);
    throw ConnectionError(message);
  } catch (const transport::RelayedMismatch& e) {
    // The same for a mismatch another rank found in a host segment: told on as that rank's,
    // and as a mismatch (a MismatchError on other hosts too, not a ConnectionError).
    std::string message = where + ": " + e.what() + details;
    const bool tell = !context.mesh_failed();
    context.fail_with(transport::ErrorKind::kMismatch, message, /*tell_peers=*/false);
    if (tell) context.relay_to_peers(e.cause(), transport::ErrorKind::kMismatch);
    throw MismatchError(message);
  } catch (const ConnectionError& e) {
    // A mesh that found the failure (a lost peer, a mismatch) has told its peers; one found
    // outside it (a host segment: a dead local rank, a mismatch there) must be told to them,
    // else ranks on other hosts read only a clean shutdown.
    std::string message = where + ": " + e.what() + details;
    context.fail(message, {}, /*tell_peers=*/!context.mesh_failed());
    throw ConnectionError(message);
  } catch (const MismatchError& e) {
    std::string message = where + ": " + e.what() + details;
    // As above; the peers, on every host, raise it as a mismatch too.
    context.fail_with(transport::ErrorKind::kMismatch, message,
                      /*tell_peers=*/!context.mesh_failed());
    throw MismatchError(message);
  } catch (const InvalidArgument& e) {
    std::string message = where + ": " + e.what() + details;
    context.fail(message);
    throw InvalidArgument(message);
  } catch (const StoreError& e) {
    std::string message = where + ": " + e.what() + details;
    context.fail(message);
    throw StoreError(message);
  } catch (const Error& e) {
    std::string message = where + ": " + e.what() + details;
    context.fail(message);
    throw Error(message);
  } catch (const std::exception& e) {
    // A user's reduction (or an allocation) threw: peers must not wait for this rank.
    context.fail(where + ": " + e.what() + details);
    throw;
  } catch (...) {
    context.fail(where + ": an exception that is not a std::exception" + details);
    throw;
  }
}

}  // namespace gloo_lite
