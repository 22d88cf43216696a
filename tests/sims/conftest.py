"""The Monte Carlo tests' Dask clusters: the distributed tests' two in-process CPU workers,
and two process workers of a test's own (for killing one)."""

from tests.distributed.conftest import client, fresh_process_client  # noqa: F401
