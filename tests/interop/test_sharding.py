"""A native-tier rule under jax.jit with inputs sharded over 8 CPU devices gives the unsharded
gradient (a subprocess: the device count is fixed before JAX is imported)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("jax", reason="needs jax (the `jax` extra)")

SCRIPT = textwrap.dedent('''
    import jax, jax.numpy as jnp, numpy as np
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
    import rulescore.interop.jax as rjax
    from softclip_like import softsign

    jax.config.update("jax_enable_x64", True)
    assert len(jax.devices()) == 8, jax.devices()
    g, h = rjax.wrap(softsign), rjax.wrap(np.tanh)  # a user's native rule and a library one
    loss = lambda x: jnp.sum(g(x) ** 2) + jnp.sum(h(x))
    x = np.linspace(-3.0, 3.0, 64).reshape(16, 4)
    mesh = Mesh(np.array(jax.devices()).reshape(8), ("data",))
    xs = jax.device_put(x, NamedSharding(mesh, P("data", None)))
    assert len(xs.addressable_shards) == 8
    step = jax.jit(jax.grad(loss))
    got = step(xs)
    assert "callback" not in step.lower(xs).as_text()  # the compiled program: no host round trip
    want = jax.grad(loss)(jnp.asarray(x))          # unsharded
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)
    closed_form = 2 * (x / (1 + abs(x))) / (1 + abs(x)) ** 2 + 1 - np.tanh(x) ** 2
    np.testing.assert_allclose(np.asarray(got), closed_form, rtol=1e-12)
    print("sharded", got.sharding.is_fully_replicated, len(got.addressable_shards))
''')


def test_native_rule_sharded_over_8_devices(tmp_path: Path) -> None:
    functions = Path(__file__).with_name("_functions.py").read_text()
    (tmp_path / "softclip_like.py").write_text(functions)
    (tmp_path / "run.py").write_text(SCRIPT)
    env = {**os.environ, "XLA_FLAGS": "--xla_force_host_platform_device_count=8", "JAX_PLATFORMS": "cpu",
           "PYTHONPATH": os.pathsep.join([str(tmp_path), str(Path(__file__).parents[2])])}
    proc = subprocess.run([sys.executable, str(tmp_path / "run.py")], env=env, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "sharded False 8" in proc.stdout
