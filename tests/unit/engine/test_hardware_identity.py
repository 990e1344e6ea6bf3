"""provenance.json names the machine (issue 53): an Intel Xeon and an AMD Zen 4 both report "AVX512" to
torch, yet the same seed trains differently on them; the record keeps the CPU's vendor, model, family/
model/stepping and kernel-relevant extensions, the GPU's driver, and the builds that compute the numbers."""

from argent.engine.provenance import cpu_identity, provenance, torch_build

XEON = """processor\t: 0
vendor_id\t: GenuineIntel
cpu family\t: 6
model\t\t: 143
model name\t: Intel(R) Xeon(R) Platinum 8480+
stepping\t: 8
flags\t\t: fpu sse4_2 avx avx2 fma avx512f avx512_bf16 amx_tile amx_bf16 amx_int8

processor\t: 1
vendor_id\t: GenuineIntel
"""
GENOA = XEON.replace("GenuineIntel", "AuthenticAMD").replace("Intel(R) Xeon(R) Platinum 8480+", "AMD EPYC 9654") \
    .replace("cpu family\t: 6", "cpu family\t: 25").replace("model\t\t: 143", "model\t\t: 17") \
    .replace(" amx_tile amx_bf16 amx_int8", "")
GRAVITON = "processor\t: 0\nFeatures\t: fp asimd asimddp sve i8mm bf16\nCPU implementer\t: 0x41\nCPU part\t: 0xd40\n"


def test_two_cpus_of_one_torch_capability_are_told_apart():
    xeon, genoa = cpu_identity(XEON), cpu_identity(GENOA)
    assert xeon == {"cpu_vendor": "GenuineIntel", "cpu_model": "Intel(R) Xeon(R) Platinum 8480+",
                    "cpu_id": "family 6, model 143, stepping 8",
                    "cpu_isa": "sse4_2 avx avx2 fma avx512f avx512_bf16 amx_tile amx_bf16 amx_int8"}
    assert genoa["cpu_model"] == "AMD EPYC 9654" and genoa["cpu_id"].startswith("family 25, model 17")
    assert "amx_tile" not in genoa["cpu_isa"]
    arm = cpu_identity(GRAVITON)
    assert arm["cpu_vendor"] == "0x41" and arm["cpu_id"] == "implementer 0x41, part 0xd40"
    assert arm["cpu_isa"] == "asimd asimddp sve bf16 i8mm"


def test_this_machines_record_names_its_cpu_and_builds():
    record = provenance("cpu")
    assert record["cpu_model"] and record["cpu_capability"] and record["numpy"] and record["torch"]
    assert record["gpu"] == record["gpu_driver"] == ""  # a CPU run names no GPU
    assert set(torch_build()) == {"onednn", "openmp"}
    assert all(isinstance(v, (str, int, bool)) for v in record.values())  # checkpoints load weights_only
