"""The per-GPU variant table: GPU naming, table lookup and ``auto``'s order;
the measured tables ship as package data."""

import fnmatch
import json
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import backends
from backends import registry, variants
from benchmarks import select

REPO = Path(__file__).resolve().parents[1]


def write_table(directory, gpu, ranking):
    path = variants.table_path(gpu, str(directory))
    with open(path, "w") as f:
        json.dump({"gpu": gpu, "ranking": ranking, "regimes": []}, f)
    return path


def test_slug_names_a_file_per_gpu_model():
    assert variants.slug("NVIDIA H100 80GB HBM3") == "nvidia-h100-80gb-hbm3"
    assert variants.table_path("NVIDIA H200", "/x") == "/x/nvidia-h200.json"


def test_gpu_name_without_a_gpu_is_none():
    from backends.gpu import cuda_device_count

    if cuda_device_count():
        assert variants.gpu_name()
    else:
        assert variants.gpu_name() is None


def test_auto_order_follows_the_table_of_this_gpu(tmp_path):
    write_table(tmp_path, "Test GPU", ["cupy", "basic"])
    order = variants.auto_order(["thrust", "cupy", "simple", "cpu"], gpu="Test GPU",
                                directory=str(tmp_path))
    assert order == ["cupy", "basic", "thrust", "simple", "cpu"]


def test_auto_order_for_a_light_curve_size(tmp_path):
    """The fastest in total over the regimes nearest in ndata leads; a
    backend unmeasured there (refused) is not put first; a regime nobody was
    timed in (over every work budget) does not count."""
    rows = [select.regime(500, 1000, {"simple": 1.0, "thrust": 2.0}),
            select.regime(4320, 1000, {"simple": 2.0, "thrust": 1.5}),
            select.regime(4320, 10000, {"simple": 10.0, "thrust": 15.0}),
            select.regime(20000, 1000, {"simple": None, "thrust": 5.0}),
            select.regime(20000, 100000, {"simple": None, "thrust": None})]
    with open(variants.table_path("Test GPU", str(tmp_path)), "w") as f:
        json.dump({"gpu": "Test GPU", "ranking": ["simple", "thrust"], "regimes": rows}, f)
    order = lambda n: variants.auto_order(["cpu"], gpu="Test GPU", directory=str(tmp_path),  # noqa: E731
                                          ndata=n)
    assert order(4000) == ["simple", "thrust", "cpu"]  # 12 s against 16.5 s
    assert order(600) == ["simple", "thrust", "cpu"]
    assert order(50000) == ["thrust", "simple", "cpu"]  # the one regime timed at 20,000 points
    assert order(None) == ["simple", "thrust", "cpu"]


def test_auto_order_is_the_default_for_another_gpu_or_none(tmp_path):
    write_table(tmp_path, "Test GPU", ["cpu"])
    default = ["thrust", "cpu"]
    assert variants.auto_order(default, gpu="Other GPU", directory=str(tmp_path)) == default
    assert variants.auto_order(default, gpu="", directory=str(tmp_path)) == default


def test_a_table_filed_under_the_wrong_gpu_is_refused(tmp_path):
    path = write_table(tmp_path, "Test GPU", ["cpu"])
    with open(path, "w") as f:
        json.dump({"gpu": "Other GPU", "ranking": ["cpu"]}, f)
    with pytest.raises(ValueError, match="measured on 'Other GPU'"):
        variants.load_table("Test GPU", str(tmp_path))


def test_resolve_auto_uses_the_table(tmp_path, monkeypatch):
    write_table(tmp_path, "Test GPU", ["reference", "cpu"])
    monkeypatch.setenv("TLS_VARIANTS_DIR", str(tmp_path))
    monkeypatch.setattr(variants, "gpu_name", lambda: "Test GPU")
    assert registry.resolve("auto") == "reference"
    monkeypatch.setattr(variants, "gpu_name", lambda: None)
    assert registry.resolve("auto") != "reference"


def test_regime_margin_and_ranking():
    rows = [select.regime(500, 1000, {"a": 1.0, "b": 1.5, "c": None}),
            select.regime(2000, 1000, {"a": 2.0, "b": 1.0, "c": None}),
            select.regime(9000, 1000, {"a": 4.0, "b": 2.0, "c": None})]
    assert rows[0]["fastest"] == "a" and rows[0]["runner_up"] == "b"
    assert rows[0]["margin"] == pytest.approx(1.5)
    assert select.ranking(rows) == ["b", "a"]
    assert select.regime(1, 1, {"a": None})["fastest"] is None


def test_readme_table_is_replaced_between_markers(tmp_path):
    begin, end = select.markers("NVIDIA H100 80GB HBM3")
    assert begin == "<!-- variants-table nvidia-h100-80gb-hbm3 -->"
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{begin}\nold\n{end}\nend\n")
    assert select.update_readme(str(readme), "NEW", "NVIDIA H100 80GB HBM3")
    assert readme.read_text() == f"intro\n{begin}\nNEW\n{end}\nend\n"
    assert not select.update_readme(str(readme), "H200'S", "NVIDIA H200")  # the README shows the H100's
    assert readme.read_text() == f"intro\n{begin}\nNEW\n{end}\nend\n"
    plain = tmp_path / "plain.md"
    plain.write_text("no markers\n")
    assert not select.update_readme(str(plain), "NEW", "NVIDIA H100 80GB HBM3")
    assert plain.read_text() == "no markers\n"


def test_the_readmes_variant_table_is_the_report_of_the_gpu_its_marker_names():
    repo = Path(__file__).parents[1]
    readme = (repo / "README.md").read_text()
    begin = readme.index("<!-- variants-table ")
    marker_end = readme.index("-->", begin) + len("-->")
    gpu_slug = readme[begin:marker_end].split()[2]
    table = readme[marker_end:readme.index(select.END_MARKER, begin)].strip()
    assert table == (repo / "reports" / "variants" / f"{gpu_slug}.md").read_text().strip()


def test_select_writes_a_table_auto_can_use(tmp_path):
    assert select.main(["--gpu", "Test GPU", "--ndata", "500", "--nperiods", "1000",
                        "--repeat", "1", "--backends", "cpu", "--out", str(tmp_path),
                        "--report", str(tmp_path / "report"), "--readme", str(tmp_path / "none.md")]) == 0
    table = variants.load_table("Test GPU", str(tmp_path))
    assert table["regimes"][0]["fastest"] == "cpu"
    assert table["regimes"][0]["seconds"]["cpu"] > 0
    assert variants.auto_order(["thrust", "cpu"], gpu="Test GPU", directory=str(tmp_path)) == [
        "cpu", "thrust"]
    assert (tmp_path / "report" / "test-gpu.md").read_text().startswith("Fastest exact backend")


def test_select_without_a_gpu_needs_a_name(monkeypatch, tmp_path):
    monkeypatch.setattr(variants, "gpu_name", lambda: None)
    with pytest.raises(SystemExit):
        select.main(["--out", str(tmp_path)])


def test_the_measured_tables_are_package_data(monkeypatch):
    """auto keeps its measured order wherever the package is installed: the
    tables live in the package and pyproject.toml ships them."""
    monkeypatch.delenv("TLS_VARIANTS_DIR", raising=False)
    package = Path(backends.__file__).parent
    tables = sorted(Path(variants.DEFAULT_DIR).glob("*.json"))
    assert tables and all(package in t.parents for t in tables)
    assert variants.load_table("NVIDIA H200")["ranking"]
    shipped = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    for table in tables:
        relative = table.relative_to(package).as_posix()
        assert any(fnmatch.fnmatch(relative, glob) for glob in shipped["backends"]), relative


def test_a_non_editable_install_finds_the_tables(tmp_path):
    import shutil

    source, site = tmp_path / "source", tmp_path / "site"  # pip builds in the tree it is given
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".*", "__pycache__", "build", "*.egg-info", "reports", "tests", "scripts"))
    built = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                            str(site), str(source)], capture_output=True, text=True)
    if built.returncode:
        pytest.skip(f"pip cannot build the package here: {built.stderr.strip().splitlines()[-1:]}")
    env = {k: v for k, v in os.environ.items() if k != "TLS_VARIANTS_DIR"}
    found = subprocess.run(
        [sys.executable, "-c", "from backends import variants; "
         "print(variants.__file__); print(variants.load_table('NVIDIA H200')['ranking'][0])"],
        cwd=tmp_path, env={**env, "PYTHONPATH": str(site)}, capture_output=True, text=True, check=True)
    module, first = found.stdout.split()
    assert Path(module).is_relative_to(site) and first in registry.backend_names()


def test_gpu_models_by_family_and_number():
    assert variants.model("NVIDIA H100 80GB HBM3") == ("H", 100)
    assert variants.model("NVIDIA GH200 480GB") == ("H", 200)
    assert variants.model("NVIDIA A100-SXM4-80GB") == ("A", 100)
    assert variants.model("NVIDIA GeForce RTX 4090") is None


@pytest.mark.parametrize("gpu, followed", [
    ("NVIDIA H100 NVL", "NVIDIA H100 80GB HBM3"),  # the same model
    ("NVIDIA H800", "NVIDIA H200"),  # same family, nearest number
    ("NVIDIA GH200 480GB", "NVIDIA H200"),
    ("NVIDIA H150", "NVIDIA H200"),  # a tie goes to the newer
    ("NVIDIA A100-SXM4-80GB", None),  # no table of its family
    ("NVIDIA GeForce RTX 4090", None),  # no model number
])
def test_nearest_table_is_the_same_model_else_the_nearest_of_its_family(tmp_path, gpu, followed):
    for name in ("NVIDIA H200", "NVIDIA H100 80GB HBM3", "NVIDIA L40S"):
        write_table(tmp_path, name, ["cpu"])
    table = variants.nearest_table(gpu, str(tmp_path))
    assert (table and table["gpu"]) == followed


def test_auto_on_an_unknown_gpu_says_which_table_it_followed(tmp_path, caplog):
    write_table(tmp_path, "NVIDIA H200", ["simple", "thrust"])
    default = ["thrust", "simple", "cpu"]
    with caplog.at_level("INFO", logger="backends"):
        order = variants.auto_order(default, gpu="NVIDIA H100 80GB HBM3", directory=str(tmp_path))
    assert order == ["simple", "thrust", "cpu"]
    assert ("no variant table for NVIDIA H100 80GB HBM3; following the table of NVIDIA H200, the nearest "
            "model measured") in caplog.text
    caplog.clear()
    with caplog.at_level("INFO", logger="backends"):
        assert variants.auto_order(default, gpu="NVIDIA A100-SXM4-80GB", directory=str(tmp_path)) == default
    assert ("no variant table for NVIDIA A100-SXM4-80GB nor for a GPU of its family; default order "
            "thrust, simple, cpu") in caplog.text


def test_select_files_the_h100_table_that_auto_then_follows(tmp_path):
    from conftest import result_set, write_results

    machine = "gpu-nvidia-h100-80gb-hbm3"
    data = result_set("a" * 40, 1, 2.0, name=select.ASV_BENCHMARK, machine=machine)
    data["results"][select.ASV_BENCHMARK][0] = [0.0379, 0.0189]  # two exact GPU backends, K2-like case
    data["results"][select.ASV_BENCHMARK][1] = [["'basic'", "'pruned'"], ["4320"], ["10000"]]
    write_results(tmp_path / "results", [data], name=select.ASV_BENCHMARK, machine=machine)
    assert select.main(["--asv", machine, "--gpu", "NVIDIA H100 80GB HBM3", "--results", str(tmp_path / "results"),
                        "--out", str(tmp_path), "--report", str(tmp_path), "--readme", str(tmp_path / "none.md")]) == 0
    assert (tmp_path / "nvidia-h100-80gb-hbm3.json").exists() and (tmp_path / "nvidia-h100-80gb-hbm3.md").exists()
    write_table(tmp_path, "NVIDIA H200", ["basic"])
    assert variants.auto_order(["basic", "pruned", "cpu"], gpu="NVIDIA H100 80GB HBM3", directory=str(tmp_path),
                               ndata=4320) == ["pruned", "basic", "cpu"]
