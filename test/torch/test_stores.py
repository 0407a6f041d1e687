"""The store adapter under every way torch hands the backend a store: init_method="file://",
env:// and an explicit TCPStore, each with two gloo_lite groups created in a row on it
(workers/stores.py); torchrun's TCPStore is test_backend.py's."""

from conftest import failures, free_port, spawn, summaries, worker


def test_file_env_and_tcp_stores(tmp_path):
    run = spawn(worker("stores.py"), 2, [str(tmp_path / "store"), str(free_port())])
    found = summaries(run, 2)
    bad = failures(run, 2)
    assert not bad, "\n".join(bad)
    assert run.codes == [0, 0], run.show()
    for rank, (checks, *_) in found.items():
        assert checks == 15, f"rank {rank} made {checks} checks, want 15:\n{run.show()}"
