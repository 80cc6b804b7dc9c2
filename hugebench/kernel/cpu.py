"""The identity of the CPU, as /proc/cpuinfo reports it."""

from __future__ import annotations

from dataclasses import dataclass, field

from hugebench.kernel.host import LOCAL, Host
from hugebench.kernel.read import read_text


@dataclass(frozen=True)
class CpuInfo:
    """The identity of CPU 0 as /proc/cpuinfo reports it."""

    vendor: str  # "intel", "amd" or "other"
    vendor_id: str = ""
    family: int = 0
    model: int = 0
    stepping: int | None = None
    model_name: str = ""
    flags: frozenset = field(default_factory=frozenset)

    @property
    def hypervisor(self) -> bool:
        """True inside a VM: the CPUID 'hypervisor' bit that every mainstream hypervisor sets."""
        return "hypervisor" in self.flags

    @property
    def microarch(self) -> str:
        """A coarse generation name, recorded for provenance; event choice itself goes by what perf accepts."""
        if self.vendor == "intel" and self.family == 6:
            for name, models in _INTEL_GENERATIONS.items():
                if self.model in models:
                    return name
            return f"intel-6-{self.model:#x}"
        if self.vendor == "amd":
            return _AMD_FAMILIES.get(self.family, f"amd-{self.family:#x}")
        return self.vendor


_INTEL_GENERATIONS = {
    "haswell-broadwell": {0x3C, 0x3F, 0x45, 0x46, 0x3D, 0x47, 0x4F, 0x56},
    "skylake-family": {0x4E, 0x5E, 0x55, 0x8E, 0x9E, 0xA5, 0xA6, 0x66},
    "icelake-and-later": {0x6A, 0x6C, 0x7D, 0x7E, 0x8C, 0x8D, 0xA7, 0x8F, 0xCF, 0xAD, 0xAE},
    "hybrid-core-atom": {0x97, 0x9A, 0xB7, 0xBA, 0xBF, 0xAA, 0xAC, 0xBD, 0xC5, 0xC6},
}
_AMD_FAMILIES = {0x17: "zen1-zen2", 0x19: "zen3-zen4", 0x1A: "zen5"}


def parse_cpuinfo(text: str) -> CpuInfo:
    """Build a CpuInfo from the first processor block of /proc/cpuinfo text."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    vendor_id = fields.get("vendor_id", "")
    vendor = {"GenuineIntel": "intel", "AuthenticAMD": "amd", "HygonGenuine": "amd"}.get(
        vendor_id, "other"
    )
    stepping = fields.get("stepping", "")
    return CpuInfo(
        vendor=vendor,
        vendor_id=vendor_id,
        family=int(fields.get("cpu family", "0") or 0),
        model=int(fields.get("model", "0") or 0),
        stepping=int(stepping) if stepping.isdigit() else None,
        model_name=fields.get("model name", ""),
        flags=frozenset(fields.get("flags", "").split()),
    )


def read_cpu_info(host: Host = LOCAL) -> CpuInfo:
    """CpuInfo of this machine (CPU 0)."""
    return parse_cpuinfo(read_text(host.proc / "cpuinfo"))
