// The Python extension gloo_lite._torch: the backend class and its factory, built with torch's
// own pybind11 against the installed torch (CMakeLists.txt), so that torch's Python types
// (Store, Backend, Work) pass in and out unchanged. python/gloo_lite/torch.py registers it.
#include <pybind11/chrono.h>
#include <pybind11/pybind11.h>
#include <torch/csrc/utils/pybind.h>

#include "bindings/torch/torch_backend.h"
#include "bindings/torch/torch_errors.h"
#include "gloo_lite/base/error.h"
#include "gloo_lite/base/log.h"

namespace py = pybind11;

PYBIND11_MODULE(_torch, m) {
  using gloo_lite::torch_backend::TorchBackend;
  // torch's classes (Store, Backend) must be registered before ours derives from them.
  py::module_::import("torch.distributed");
  m.doc() = "gloo_lite as a torch.distributed backend (see gloo_lite.torch)";
  // The torch.__version__ this was compiled against (CMakeLists.txt); gloo_lite.torch compares.
  m.attr("built_for_torch") = GLOO_LITE_TORCH_VERSION;

  py::class_<TorchBackend, ::c10d::Backend, c10::intrusive_ptr<TorchBackend>>(m, "Backend")
      .def("describe", &TorchBackend::describe,
           "This backend's gloo_lite context: its id, rank and size.")
      .def_property_readonly("context_id",
                             [](const TorchBackend& backend) { return backend.describe(); });

  m.def("set_log_rank", &gloo_lite::log_set_rank, py::arg("rank"),
        "The rank gloo_lite's log lines of this process show (\"rank 3\").");

  m.def(
      "_raise_error_sample",
      [](const std::string& name) {
        std::rethrow_exception(gloo_lite::torch_backend::to_torch(gloo_lite::error_sample(name)));
      },
      py::arg("name"), "Raises the C++ error sample `name` as torch sees it (tests).");

  m.def(
      "create_backend",
      [](const c10::intrusive_ptr<::c10d::Store>& store, const std::string& store_name, int rank,
         int size, std::chrono::milliseconds timeout, bool check) {
        return c10::make_intrusive<TorchBackend>(store, store_name, rank, size, timeout, check);
      },
      py::arg("store"), py::arg("store_name"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
      py::arg("check"), py::call_guard<py::gil_scoped_release>(),
      "Connects this rank to its group through torch's store; see gloo_lite.torch.");
}
