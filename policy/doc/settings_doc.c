/* settings_doc.c — the words for each TIERMEM_* variable (see settings_doc.h). */
#include "policy/doc/settings_doc.h"

#define TIERS "Tiers and their sizes"
#define PLACEMENT "Placement and movement"
#define VIEW "What the program is told"
#define OBSERVE "Logs, stats and shared budgets"
#define SWITCHES "Switches"

const tm_setting_doc tm_setting_docs[] = {
    { "TIERMEM_HBM_LIMIT", TIERS,
      "bytes of device memory the process may use on each device, or a limit per device, "
      "`DEVICE:SIZE,...` (`0:70G,1:70G`; a device not named gets its memory)",
      "the device's memory" },
    { "TIERMEM_HBM_RESERVE", TIERS,
      "HBM that chunked allocations leave free, for the driver and small allocations; while `heat` "
      "streams spilled weights, small allocations made while a model file's tensors are uploaded "
      "leave it free too",
      "1/64 of the HBM limit, in whole chunks" },
    { "TIERMEM_CXL_NODE", TIERS,
      "NUMA node of the CXL tier; a node neither libnuma nor the driver knows is refused in one line "
      "(no CXL tier)",
      "a CPU-less node in a CXL region (libcxl); else no CXL tier" },
    { "TIERMEM_CXL_LIMIT", TIERS,
      "bytes the process may place in CXL (at most what the node has)",
      "half the node's available memory at start (`MemAvailable`, so page cache does not shrink it)" },
    { "TIERMEM_DDR_NODE", TIERS,
      "NUMA node of the DDR tier; an unknown node is refused in one line and the tier found as if unset",
      "the device's `HOST_NUMA_ID`, else its PCI node, else this CPU's" },
    { "TIERMEM_DDR_LIMIT", TIERS,
      "bytes the process may place in DDR (at most what the node has)",
      "half the node's available memory at start (`MemAvailable`, so page cache does not shrink it)" },
    { "TIERMEM_TIER_ORDER", TIERS,
      "tiers that take chunks, in order (`hbm,cxl,ddr`, `hbm,ddr`, ...)",
      "`hbm,cxl,ddr`" },
    { "TIERMEM_MIN_TIERED", PLACEMENT,
      "allocations this large or larger are chunked (2 MiB chunks, each in one tier); smaller ones pass "
      "through to HBM and are counted",
      "`2M`" },
    { "TIERMEM_RULES", PLACEMENT,
      "`MATCH=TIER,...`: the first matching rule names the tier an allocation starts in (and, under "
      "`heat`, is kept in); `size>=N` and `size<N` match by size, `name=GLOB` the chunks holding a "
      "model-file tensor whose name matches; TIER `plain` after a size match keeps the allocation plain "
      "driver memory in HBM, never chunked, so that any process can open its legacy IPC handle",
      "none" },
    { "TIERMEM_POLICY", PLACEMENT,
      "`heat`: placed as `size` places, then moved by access heat within the rules and the tier order; "
      "`size`: placed at allocation, never moved; `managed` and `managed-advised`: the unified-memory "
      "baseline (allocations `size` would chunk become `cuMemAllocManaged` memory, the second with the "
      "usual advice)",
      "`heat` (a model that fits in HBM never migrates)" },
    { "TIERMEM_MIGRATE_RATE", PLACEMENT,
      "bytes per second the `heat` policy may move (`0`: chunks never move)",
      "`4G` (a twelfth of a PCIe 5 x16 link)" },
    { "TIERMEM_PROFILE", PLACEMENT,
      "under `heat`: a file holding the heat of every chunk, read at start and written at exit, so a "
      "run starts placed as the last one ended; at most 64 MiB; never through a symlink, never waiting "
      "on a FIFO: a file that is not this user's regular file is refused in one line and not written at "
      "exit, and a file there that is not a tiermem profile of this user is never replaced",
      "none" },
    { "TIERMEM_HEAT", PLACEMENT,
      "where access heat comes from: `launch` (kernel parameters of sampled launches), `ebpf` (served "
      "by `tiermem-heat --feed` beside the process; the library itself loads no BPF and uses "
      "`launch`), `off`",
      "`launch`" },
    { "TIERMEM_HEAT_HALFLIFE", PLACEMENT,
      "how fast heat fades: `500ms`, `10s`, `2m` (a bare number is seconds)",
      "`10s`" },
    { "TIERMEM_HEAT_SAMPLE", PLACEMENT,
      "`launch` heat samples 1 launch in N: `auto` (N follows what a sample costs), or N from 1 to "
      "65536, fixed, so that every run of a program samples the same launches",
      "`auto`" },
    { "TIERMEM_STREAM", PLACEMENT,
      "under `heat`: `auto` streams spilled weights through an HBM staging ring ahead of the kernels "
      "that read them, sized once a decode step has shown which weights it reads, where that crosses the "
      "link faster than reading them in place (the ring's HBM counted); `on` whenever HBM can give the "
      "ring; `off` leaves spilled weights read in place; no ring with `TIERMEM_FILE_TIER=1`",
      "`auto`" },
    { "TIERMEM_STREAM_RING", PLACEMENT,
      "the staging ring's HBM, in whole chunks, at least 2; a weight larger than the ring is read in place",
      "the largest spilled weight and one chunk, at most 1/4 of the HBM limit" },
    { "TIERMEM_FILE_TIER", PLACEMENT,
      "`1`: chunks copied whole from a model file give their memory back when no tier has room, and "
      "are read back from the file before work needs them",
      "`0`" },
    { "TIERMEM_MEMINFO", VIEW,
      "what `cuMemGetInfo`, `cuDeviceTotalMem` and NVML report: `available` (total: HBM; free: what "
      "HBM has left plus the HBM that chunks hold and the lower tiers have room for, and never less than "
      "the lower tiers' room up to 1/8 of HBM); `physical` (HBM "
      "within its limit, free less the reserve); `virtual` (HBM plus the lower tiers' limits). The "
      "total is fixed before any context exists and never changes",
      "`available`" },
    { "TIERMEM_IPC", VIEW,
      "`tiermem`: chunked memory is shared between tiermem processes through tiermem's own IPC "
      "handles; `passthrough`: allocations HBM has room for stay plain driver memory, shareable with "
      "any process, and only what spills is chunked",
      "`tiermem`" },
    { "TIERMEM_LOG", OBSERVE,
      "`error`, `warn`, `info` (a start-up line per tier, an exit line with the peak per tier) or "
      "`debug` (every placement)",
      "`warn`" },
    { "TIERMEM_LOG_FILE", OBSERVE,
      "append messages to this file instead of standard error: a regular file of this user with no "
      "other name (a hard link is refused), never through a symlink; created with mode 0600. "
      "Control characters in every line are escaped, so a name holding a newline cannot forge a line",
      "standard error" },
    { "TIERMEM_STATS", OBSERVE,
      "`off`, or a path for the stats region that `tiermem-stat` reads (kept after exit, holding the "
      "final state): created new with mode 0600, never through a symlink; an existing name is replaced "
      "only when it is a regular file of this user holding a stats region",
      "`/dev/shm/tiermem-<uid>/tiermem.<pid>`, in a directory of this user's made with mode 0700, "
      "removed at exit" },
    { "TIERMEM_GROUP", OBSERVE,
      "a Unix group (name or id) whose tiermem processes share the lower-tier budgets through a "
      "ledger of mode 0660; a process whose budget another holds part of says so once, naming it",
      "no sharing: a process shares its budgets only with the processes it starts (a server and its "
      "workers)" },
    { "TIERMEM_LEDGER", OBSERVE,
      "`off` (each process keeps its own lower-tier limits) or the path of the shared ledger (naming "
      "one does not make unrelated processes share: `TIERMEM_GROUP` does); a symlink, another user's "
      "file or anything that is not a ledger is left untouched and named in one line, and the process "
      "keeps its own limits; one that fails validation is set aside as `PATH.damaged.<pid>`",
      "the user's or the group's ledger in `/dev/shm`" },
    { "TIERMEM_DRIVER", SWITCHES,
      "the real driver library to load",
      "`libcuda.so.1`" },
    { "TIERMEM_DISABLE", SWITCHES,
      "`1`: every call passes straight through to the driver",
      "`0`" },
};

const size_t tm_setting_doc_count = sizeof tm_setting_docs / sizeof tm_setting_docs[0];
