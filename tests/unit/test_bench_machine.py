"""Every benchmark report names the CPU it ran on (bench/cpu.py): the same code spent about twice the
CPU per recall on one host as on another, so a figure is read only beside its CPU."""

from __future__ import annotations

import pytest

from bench.cpu import cpu_model, machine, machine_line


@pytest.mark.parametrize(
    ("cpuinfo", "expected"),
    [
        ("processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC\nprocessor\t: 1\nmodel name\t: AMD EPYC\n", "AMD EPYC"),
        ("model name\t: Intel(R) Xeon(R)  Platinum 8481C CPU @ 2.70GHz\n", "Intel(R) Xeon(R) Platinum 8481C CPU @ 2.70GHz"),
        ("processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\n", None),  # ARM: no model name line
    ],
)
def test_cpu_model_reads_cpuinfo(cpuinfo, expected):
    got = cpu_model(cpuinfo)
    assert got == expected if expected else (got and "BogoMIPS" not in got)


def test_machine_line_names_the_cpu():
    info = machine()
    assert set(info) == {"cpus", "cpu", "python"} and info["cpus"] >= 1
    assert machine_line({"cpus": 2, "cpu": "AMD EPYC", "python": "3.11.7"}) == "machine: AMD EPYC, 2 CPUs, Python 3.11.7"
