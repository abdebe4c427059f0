#===- test_frontend.py - Tests of the PyTorch front end -------------------===#
#
# Part of the NeuroShard project.
#
#===----------------------------------------------------------------------===#

import os
import re
import subprocess
import sys

import pytest
import torch
from torch import nn

from built_tools import REPO, tool
from neuroshard import frontend


class Nested(nn.Module):
    """Bags as a plain attribute, in a ModuleList, in a ModuleDict, and in a
    Sequential inside a ModuleDict, next to modules that are not bags."""

    def __init__(self):
        super().__init__()
        self.dense = nn.Linear(4, 4)
        self.user = nn.EmbeddingBag(100, 8, mode="sum")
        self.lists = nn.ModuleList([nn.EmbeddingBag(50, 4, mode="mean"),
                                    nn.Embedding(10, 4)])
        self.dicts = nn.ModuleDict({
            "ad-id": nn.EmbeddingBag(30, 16, mode="sum"),
            "deep": nn.Sequential(nn.ReLU(),
                                  nn.EmbeddingBag(20, 12, mode="mean"))})


def batch(indices, offsets):
    return (torch.tensor(indices), torch.tensor(offsets))


def nested_samples():
    # Three bags per batch everywhere.
    return {
        "user": batch([5, 5, 5, 7, 9, 9], [0, 3, 4]),
        "lists.0": [batch([1, 2], [0, 1, 2]), batch([3, 3, 3, 3], [0, 0, 2])],
        "dicts.ad-id": torch.tensor([[0, 1], [0, 2], [0, 3]]),
        "dicts.deep.1": batch([0, 1, 2], [0, 1, 2]),
    }


def test_finds_bags_in_any_nesting_and_names_them_by_path():
    paths = [p for p, _ in frontend.find_embedding_bags(Nested())]
    assert paths == ["user", "lists.0", "dicts.ad-id", "dicts.deep.1"]


def test_symbols_are_sanitised_and_distinct():
    assert frontend.symbol_name("dicts.ad-id") == "dicts_ad_id"
    assert frontend.symbol_name("0.emb") == "t0_emb"
    assert frontend._unique_symbols(["a.b", "a_b", "a-b"]) == \
        ["a_b", "a_b_1", "a_b_2"]


def test_statistics_are_measured_from_the_samples():
    tables = {t.path: t for t in
              frontend.measure_tables(Nested(), nested_samples())}
    user = tables["user"]
    assert (user.symbol, user.rows, user.dim, user.mode, user.batch_size) == \
        ("user", 100, 8, "sum", 3)
    # Bags [5 5 5], [7], [9 9]: 6 indices in 3 bags. Row 7 is hit once,
    # row 9 twice (bin 1: (1, 2]) and row 5 three times (bin 2: (2, 4]).
    assert user.pooling_factor == pytest.approx(2.0)
    assert user.access_hist == pytest.approx(
        [1 / 3, 1 / 3, 1 / 3] + [0.0] * 14)
    # Two batches: 6 indices in 6 bags. The histogram is one batch's,
    # averaged: rows 1 and 2 once each in the first (bin 0), row 3 four
    # times in the second (bin 2). Pooling the batches' indices would have
    # given 2/3 and 1/3, a histogram that depends on how many batches were
    # sampled.
    lists = tables["lists.0"]
    assert lists.mode == "mean"
    assert lists.pooling_factor == pytest.approx(1.0)
    assert lists.access_hist == pytest.approx(
        [0.5, 0.0, 0.5] + [0.0] * 14)
    # A 2-D input is one bag per row; row 0 is hit three times.
    ad = tables["dicts.ad-id"]
    assert ad.symbol == "dicts_ad_id"
    assert ad.pooling_factor == pytest.approx(2.0)
    assert ad.access_hist == pytest.approx([0.75, 0.0, 0.25] + [0.0] * 14)


def test_hot_rows_reach_the_last_bin():
    bag = nn.ModuleList([nn.EmbeddingBag(4, 4, mode="sum")])
    indices = torch.zeros(2**15 + 1, dtype=torch.int64)
    (table,) = frontend.measure_tables(
        bag, {"0": (indices, torch.tensor([0, 2**14]))})
    assert table.access_hist == [0.0] * 16 + [1.0]
    assert table.pooling_factor == pytest.approx((2**15 + 1) / 2)


def test_include_last_offset_counts_bags_like_pytorch():
    bag = nn.ModuleList([nn.EmbeddingBag(10, 4, mode="sum",
                                         include_last_offset=True)])
    (table,) = frontend.measure_tables(
        bag, {"0": batch([1, 2, 3, 4], [0, 1, 4])})
    assert table.batch_size == 2
    assert table.pooling_factor == pytest.approx(2.0)


def test_emitted_text_has_the_documented_shape():
    text = frontend.model_to_mlir(Nested(), nested_samples(), devices=2,
                                  memory_gb=[1.0, 0.5])
    assert "module attributes {neuroshard.topology = #neuroshard.topology<" \
        "devices = 2, memory_gb = [1.0, 0.5]>}" in text
    assert re.search(r"neuroshard.table @dicts_ad_id : rows 30, dim 16, f32 "
                     r"\{pooling_factor = 2.0 : f64,\n    access_hist = "
                     r"array<f64: 0.75, 0.0, 0.25(, 0.0){14}>,\n"
                     r"    module_path = \"dicts.ad-id\"\}", text)
    assert "%idx3: tensor<?xi64>, %off3: tensor<4xi64>" in text
    assert "%e1 = neuroshard.embedding_bag @lists_0(%idx1, %off1) mean\n" \
        "        : (tensor<?xi64>, tensor<4xi64>) -> tensor<3x4xf32>" in text
    assert text.count("neuroshard.embedding_bag") == 4
    i32 = frontend.model_to_mlir(Nested(), nested_samples(),
                                 index_type="i32", batch_size=8)
    assert "%idx0: tensor<?xi32>, %off0: tensor<9xi32>" in i32
    assert "-> tensor<8x8xf32>" in i32


def test_emitted_module_parses_and_shards():
    opt = tool("neuroshard-opt")
    text = frontend.model_to_mlir(Nested(), nested_samples(), devices=2,
                                  memory_gb=1.0)
    parsed = subprocess.run([opt], input=text, capture_output=True,
                            text=True)
    assert parsed.returncode == 0, parsed.stderr
    assert parsed.stdout.count("neuroshard.table @") == 4
    sharded = subprocess.run(
        [opt, "--neuroshard-shard=cost-model=analytical plan-table=-"],
        input=text, capture_output=True, text=True)
    assert sharded.returncode == 0, sharded.stderr
    assert "NeuroShard plan:" in sharded.stdout
    assert sharded.stdout.count("neuroshard.fused_embedding_bag") >= 1
    # The plan names the tables by their module paths.
    assert "dicts.ad-id" in sharded.stdout
    assert "module_path = \"dicts.ad-id\"" in sharded.stdout


@pytest.mark.parametrize("batch_size", [1, 3, 4096, 65536])
def test_any_batch_size_writes_a_module_the_pass_takes(batch_size):
    # Sampled at 3 bags, the histograms describe 3 bags; at another batch
    # they are carried there, so the verifier's batch rule holds.
    text = frontend.model_to_mlir(Nested(), nested_samples(), devices=2,
                                  memory_gb=1.0, batch_size=batch_size)
    assert "-> tensor<%dx8xf32>" % batch_size in text
    sharded = subprocess.run(
        [tool("neuroshard-opt"),
         "--neuroshard-shard=cost-model=analytical plan-table=-"],
        input=text, capture_output=True, text=True)
    assert sharded.returncode == 0, sharded.stderr
    hists = re.findall(r"access_hist = array<f64: ([^>]*)>", text)
    assert len(hists) == 4
    if batch_size == 3:
        assert "array<f64: 0.75, 0.0, 0.25" in text
    if batch_size >= 4096:
        # 30 rows take 8192 lookups or more: hardly a row is hit once.
        ad = re.search(r"@dicts_ad_id[^>]*access_hist = array<f64: "
                       r"([^>]*)>", text).group(1)
        assert float(ad.split(", ")[0]) < 1e-6


def test_float_literals_parse_in_mlir():
    """printf writes 1e-05 without a '.', which MLIR's parser rejects; every
    literal the front end prints must parse back to the same value."""
    values = [1e-05, 1e-300, 1e+20, 3.0, 0.0, 0.1, 123456789.0, 2.5e-07]
    literals = [frontend._float_literal(v) for v in values]
    assert literals[0] == "1.0e-05"
    text = ("func.func @f() -> tensor<%dxf64> {\n"
            "  %%0 = arith.constant dense<[%s]> : tensor<%dxf64>\n"
            "  return %%0 : tensor<%dxf64>\n}\n" %
            (len(values), ", ".join(literals), len(values), len(values)))
    parsed = subprocess.run([tool("neuroshard-opt")], input=text,
                            capture_output=True, text=True)
    assert parsed.returncode == 0, parsed.stderr
    for literal in literals:
        assert float(literal) in values


def test_example_generator_prints_parsable_floats():
    sys.path.insert(0, os.path.join(REPO, "examples"))
    try:
        import generate_dlrm
    finally:
        sys.path.pop(0)
    assert generate_dlrm.float_literal(1e-05) == "1.0e-05"
    assert generate_dlrm.float_literal(0.25) == "0.25"


@pytest.mark.parametrize("model, samples, message", [
    (nn.Sequential(nn.Linear(2, 2), nn.Embedding(4, 4)), {},
     "model Sequential has no nn.EmbeddingBag modules"),
    (nn.ModuleList([nn.EmbeddingBag(10, 4, mode="max")]),
     {"0": batch([1], [0])}, "'0' uses mode='max'; NeuroShard supports"),
    (nn.ModuleList([nn.EmbeddingBag(10, 4, mode="sum", padding_idx=0)]),
     {"0": batch([1], [0])}, "'0' has padding_idx=0"),
    (nn.ModuleList([nn.EmbeddingBag(10, 4, mode="sum")]),
     {"0": (torch.tensor([1]), torch.tensor([0]), torch.tensor([0.5]))},
     "'0' batch 0 has per_sample_weights"),
    (nn.ModuleList([nn.EmbeddingBag(10, 4, mode="sum"),
                    nn.EmbeddingBag(10, 4, mode="sum")]),
     {"0": batch([1, 2], [0, 1]), "1": [batch([1], [0, 1]),
                                         batch([1], [0])]},
     "mismatched batches: '1' batch 1 has 1 bags but '0' batch 0 has 2"),
    (nn.ModuleList([nn.EmbeddingBag(10, 4, mode="sum")]),
     {"0": batch([1, 10], [0, 1])},
     "'0' batch 0 has index 10 outside the table's 10 rows"),
    (nn.ModuleList([nn.EmbeddingBag(10, 6, mode="sum")]),
     {"0": batch([1], [0])}, "'0': 'dim' must be a positive multiple of 4, got 6"),
    (nn.ModuleList([nn.EmbeddingBag(10, 4, mode="sum")]), {},
     "no sample batches for '0'"),
    (nn.ModuleList([nn.EmbeddingBag(10, 4, mode="sum")]),
     {"0": batch([1], [0]), "1": batch([1], [0])},
     "samples name '1', which is not an nn.EmbeddingBag of the model"),
    (nn.ModuleList([nn.EmbeddingBag(10, 4, mode="sum")]),
     {"0": batch([1, 2], [1])}, "'0' batch 0: offsets must start at 0"),
    (nn.ModuleList([nn.EmbeddingBag(10, 4, mode="sum")]),
     {"0": batch([1, 2], [0, 3])}, "offsets must be non-decreasing"),
    (nn.ModuleList([nn.EmbeddingBag(10, 4, mode="sum")]),
     {"0": (torch.tensor([1.0]), torch.tensor([0]))},
     "'0': indices must be an integer tensor"),
    (nn.ModuleList([nn.EmbeddingBag(10, 4, mode="sum")]),
     {"0": torch.tensor([1, 2])}, "indices without offsets must be 2-D"),
])
def test_bad_models_and_samples_are_refused(model, samples, message):
    with pytest.raises(frontend.FrontendError) as error:
        frontend.model_to_mlir(model, samples)
    assert message in str(error.value)


def test_bad_options_are_refused():
    samples = {"0": batch([1], [0])}
    model = nn.ModuleList([nn.EmbeddingBag(10, 4, mode="sum")])
    with pytest.raises(frontend.FrontendError, match="index type must be"):
        frontend.model_to_mlir(model, samples, index_type="i16")
    with pytest.raises(frontend.FrontendError,
                       match="memory_gb lists 1 capacities for 2 devices"):
        frontend.model_to_mlir(model, samples, devices=2, memory_gb=[1.0])
    with pytest.raises(frontend.FrontendError,
                       match="'devices': the device count must be between 1 "
                             "and 65536, got 0"):
        frontend.model_to_mlir(model, samples, devices=0)
    with pytest.raises(frontend.FrontendError,
                       match="'memory_gb': memory capacity must be a positive "
                             "number of GB up to 1048576, got inf"):
        frontend.model_to_mlir(model, samples, memory_gb=float("inf"))


def test_example_runs_end_to_end(tmp_path):
    tools = os.path.dirname(tool("neuroshard-opt"))
    tool("neuroshard-run")
    result = subprocess.run(
        [sys.executable, os.path.join(REPO, "examples", "pytorch_dlrm.py"),
         "--tools-dir", tools, "--out", str(tmp_path), "--tables", "12",
         "--batch", "256", "--cost-model", "analytical", "--max-rows",
         "2000"], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "NeuroShard plan:" in result.stdout
    assert "(updated weights), tolerance 1.0E-05: match" in result.stdout
    assert (tmp_path / "model.sharded.mlir").exists()


class Aliased(nn.Module):
    """One bag registered under two paths, next to another bag."""

    def __init__(self):
        super().__init__()
        self.user = nn.EmbeddingBag(100, 8, mode="sum")
        self.shared = self.user
        self.item = nn.EmbeddingBag(40, 4, mode="mean")


def aliased_samples(user_path="shared"):
    return {user_path: torch.tensor([[1, 2], [3, 4]]),
            "item": batch([1, 2, 3], [0, 1])}


def test_module_registered_under_two_paths_is_one_table():
    assert frontend.module_aliases(Aliased()) == {
        "user": "user", "shared": "user", "item": "item"}
    for path in ("user", "shared"):
        tables = frontend.measure_tables(Aliased(), aliased_samples(path))
        assert [t.path for t in tables] == ["user", "item"]
        assert tables[0].aliases == ["shared"]
        assert tables[0].pooling_factor == 2.0
    text = frontend.model_to_mlir(Aliased(), aliased_samples(), devices=2)
    assert "// user, also 'shared': nn.EmbeddingBag(100, 8" in text
    assert text.count("neuroshard.table @") == 2


def test_samples_under_two_paths_of_one_bag_are_two_features():
    samples = aliased_samples()
    samples["user"] = torch.tensor([[5, 6, 7], [8, 9, 9]])
    tables = frontend.measure_tables(Aliased(), samples)
    assert [t.path for t in tables] == ["user", "item"]
    user = tables[0]
    assert [(f.name, f.pooling_factor) for f in user.features] == [
        ("shared", 2.0), ("user", 3.0)]
    text = frontend.emit_module(tables, devices=2)
    # No averaged statistics on the table: each lookup carries its own.
    assert "neuroshard.table @user : rows 100, dim 8, f32\n" in text
    assert "looked up by 2 features (shared, user)" in text
    assert text.count("neuroshard.embedding_bag @user(") == 2
    assert "{pooling_factor = 3.0 : f64," in text
    assert text.count("neuroshard.embedding_bag") == 3


def test_features_of_a_shared_bag_parse_shard_and_run(tmp_path):
    class Shared(nn.Module):
        def __init__(self):
            super().__init__()
            self.bag = nn.EmbeddingBag(64, 8, mode="sum")
            self.other = nn.EmbeddingBag(32, 4, mode="mean")

    samples = {"bag": {"clicks": torch.tensor([[1, 2, 3, 4], [5, 6, 7, 8]]),
                       "views": torch.tensor([[9], [9]])},
               "other": torch.tensor([[1, 2], [3, 4]])}
    text = frontend.model_to_mlir(Shared(), samples, devices=2,
                                  memory_gb=1.0)
    assert "// feature 'clicks', 8 sample indices" in text
    assert "// feature 'views', 2 sample indices" in text
    module = tmp_path / "shared.mlir"
    module.write_text(text)
    opt = tool("neuroshard-opt")
    sharded = subprocess.run(
        [opt, str(module), "--neuroshard-shard=cost-model=analytical "
         "plan-table=-"], capture_output=True, text=True)
    assert sharded.returncode == 0, sharded.stderr
    # Every shard of the bag is read once per feature.
    reads = sharded.stdout.count("@bag cols")
    assert reads >= 2 and reads % 2 == 0, sharded.stdout
    (tmp_path / "sharded.mlir").write_text(
        sharded.stdout[sharded.stdout.index("module"):])
    run = subprocess.run(
        [tool("neuroshard-run"), str(tmp_path / "sharded.mlir"), "--compare",
         str(module), "--backward"], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert ": match" in run.stdout


def test_feature_maps_are_checked():
    with pytest.raises(frontend.FrontendError,
                       match="'user': the feature map is empty"):
        frontend.measure_tables(Aliased(), {"user": {},
                                            "item": batch([1], [0])})
    samples = aliased_samples()
    samples["user"] = {"shared": torch.tensor([[1, 2], [3, 4]])}
    with pytest.raises(frontend.FrontendError,
                       match="'user' has two features named 'shared'"):
        frontend.measure_tables(Aliased(), samples)
    samples = {"user": {"a": torch.tensor([[1, 2]])},
               "item": batch([1, 2, 3], [0, 1])}
    with pytest.raises(frontend.FrontendError,
                       match="mismatched batches: 'item' batch 0 has 2 bags "
                       "but 'user' feature 'a' batch 0 has 1"):
        frontend.measure_tables(Aliased(), samples)


MODEL_SCRIPT = '''
import torch
from torch import nn

class M(nn.Module):
    def __init__(self):
        super().__init__()
        self.user = nn.EmbeddingBag(100, 8, mode="sum")
        self.shared = self.user
        self.item = nn.EmbeddingBag(40, 4, mode="mean")

def neuroshard_model():
    return M(), {"shared": torch.tensor([[1, 2], [3, 4]]),
                 "item": (torch.tensor([1, 2, 3]), torch.tensor([0, 1]))}
'''


def run_frontend(*args):
    return subprocess.run([sys.executable, "-m", "neuroshard.frontend"] +
                          [str(a) for a in args], capture_output=True,
                          text=True, timeout=120)


def test_command_line_lists_and_emits(tmp_path):
    script = tmp_path / "model.py"
    script.write_text(MODEL_SCRIPT)
    listed = run_frontend(script, "--list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        "user\t100 x 8\tsum\talso shared", "item\t40 x 4\tmean"]
    out = tmp_path / "model.mlir"
    emitted = run_frontend(script, "--devices", "2", "--memory-gb", "8,4",
                           "--index-type", "i32", "-o", out)
    assert emitted.returncode == 0, emitted.stderr
    text = out.read_text()
    assert "devices = 2, memory_gb = [8.0, 4.0]" in text
    assert "tensor<?xi32>" in text
    parsed = subprocess.run([tool("neuroshard-opt")], input=text,
                            capture_output=True, text=True)
    assert parsed.returncode == 0, parsed.stderr


@pytest.mark.parametrize("body, args, message", [
    (None, [], "'{script}' is not a file"),
    ("x = 1\n", [], "'{script}' defines no function neuroshard_model()"),
    ("def neuroshard_model():\n    raise KeyError('feature')\n", [],
     "neuroshard_model() of '{script}' failed: KeyError: 'feature'"),
    ("def neuroshard_model():\n    return 1\n", [],
     "must return (model, samples), got int"),
    ("raise SystemError('broken')\n", [],
     "running '{script}' failed: SystemError: broken"),
    (MODEL_SCRIPT, ["--memory-gb", "8,x"],
     "--memory-gb: '8,x' is not a number or a comma list of numbers"),
    (MODEL_SCRIPT, ["--devices", "3", "--memory-gb", "8,4"],
     "memory_gb lists 2 capacities for 3 devices"),
    (MODEL_SCRIPT, ["-o", "/nonexistent-dir/out.mlir"],
     "cannot write '/nonexistent-dir/out.mlir'"),
])
def test_command_line_errors_are_one_line(tmp_path, body, args, message):
    script = tmp_path / "model.py"
    if body is not None:
        script.write_text(body)
    result = run_frontend(script, *args)
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("neuroshard.frontend: error: ")
    assert message.format(script=script) in lines[0]


def test_command_line_without_a_script_shows_usage():
    result = run_frontend()
    assert result.returncode == 2
    assert "usage: python -m neuroshard.frontend" in result.stderr
