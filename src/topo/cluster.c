// cluster.c — GPU devices, cluster presets, NxGPU / NODESxGPUSxGPU, cpu:N, JSON I/O, validation
// (topo section 1).
// Every constant is derived in docs/cost-model.md ("Clusters"): per-direction bandwidths are
// nominal link rates times a usable factor (what NCCL-class collectives achieve on them).
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "topo/topo.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

// Usable fractions (docs/cost-model.md, "Links" and "Memory").
#define NVLINK_USABLE 0.8  // NCCL bus bandwidth on NVLink/NVSwitch: ~80% of nominal
#define IB_USABLE 0.8      // ~80% of the NIC line rate after protocol overheads
#define PCIE_USABLE 0.6    // PCIe 4.0 P2P through switches and across sockets, all-to-all
#define MEM_USABLE 0.95    // CUDA context (~1%) and allocator fragmentation (~4%)

// cpu:N (this machine; placeholders until the profiler measures it, docs/cost-model.md)
#define CPU_CORE_FLOPS 95e9      // fp32 SGEMM per core (OpenBLAS, ~190 GFLOP/s on 2 cores)
#define CPU_RAM_SHARE 0.5        // half of physical RAM is split evenly over the N ranks
#define CPU_RAM_FALLBACK (16.0 * GIB)
#define CPU_SHM_BW 5e9           // bytes/s per direction, MPI shared-memory transport
#define CPU_SHM_LAT 1e-6
#define CPU_MAX_RANKS 4096

typedef struct device_spec {
    const char *device;   // the name in --cluster forms and zg_cluster.device
    double mem_bytes, peak_flops;
    double intra_bw, intra_lat;
    double inter_bw, inter_lat;  // per GPU; nic_shared: one NIC's line rate shared by the node
    int nic_shared;
} device_spec;

// The device table. Figures and their sources: docs/cost-model.md §1 ("Devices"). Dense BF16
// tensor-core peaks (not the 2:4-sparsity figures); memory as nvidia-smi reports it, in GiB;
// bandwidths per direction.
//
// A100 SXM4 80GB: 312 TFLOP/s; NVLink3 600 GB/s bidirectional = 300 per direction; one HDR
// 200 Gb/s (25 GB/s) NIC per GPU across nodes (DGX A100 layout).
static const device_spec dev_a100 = {"A100", 80.0 * GIB, 312e12, 300e9 * NVLINK_USABLE,
                                     5e-6,   25e9 * IB_USABLE, 10e-6, 0};
// A800 SXM 80GB: 312 TFLOP/s dense bf16; NVLink 400 GB/s bidirectional = 200 GB/s per direction;
// InfiniBand HDR 200 Gb/s (25 GB/s) per GPU across nodes (assumed; the paper says only "IB").
static const device_spec dev_a800 = {"A800", 80.0 * GIB, 312e12, 200e9 * NVLINK_USABLE,
                                     5e-6,   25e9 * IB_USABLE, 10e-6, 0};
// RTX A6000 48GB: 154.8 TFLOP/s dense bf16 (309.7 is the 2:4-sparsity figure); PCIe 4.0 x16
// (31.5 GB/s per direction) inside a node; one HDR 200 Gb/s NIC per node, shared by its GPUs
// (25/8 GB/s per GPU in an 8-GPU node).
static const device_spec dev_a6000 = {"A6000", 48.0 * GIB, 154.8e12, 31.5e9 * PCIE_USABLE,
                                      10e-6,   25e9, 15e-6, 1};
// L40S 48GB (GDDR6, ECC on: nvidia-smi ~46,068 MiB = 45 GiB): 362.05 TFLOP/s dense bf16; PCIe
// 4.0 x16, no NVLink; one NDR 400 Gb/s NIC per node shared by its GPUs (assumed).
static const device_spec dev_l40s = {"L40S", 45.0 * GIB, 362.05e12, 31.5e9 * PCIE_USABLE,
                                     10e-6,  50e9, 15e-6, 1};
// H100 SXM5 80GB: 989 TFLOP/s dense bf16; NVLink4 900 GB/s bidirectional = 450 per direction;
// NDR InfiniBand 400 Gb/s (50 GB/s) per GPU.
static const device_spec dev_h100 = {"H100", 80.0 * GIB, 989e12, 450e9 * NVLINK_USABLE,
                                     5e-6,   50e9 * IB_USABLE, 10e-6, 0};
// H200 SXM 141GB (nvidia-smi reports ~140 GiB): the H100's compute and links.
static const device_spec dev_h200 = {"H200", 140.0 * GIB, 989e12, 450e9 * NVLINK_USABLE,
                                     5e-6,   50e9 * IB_USABLE, 10e-6, 0};
// B200 (HGX/DGX B200) 180GB HBM3e (nvidia-smi ~179 GiB; unverified): 2.25 PFLOP/s dense bf16
// (HGX B200: 36 PFLOP/s sparse for 8 GPUs); NVLink5 1.8 TB/s bidirectional = 900 per direction;
// one NDR 400 Gb/s NIC per GPU (DGX B200: 8x ConnectX-7).
static const device_spec dev_b200 = {"B200", 179.0 * GIB, 2250e12, 900e9 * NVLINK_USABLE,
                                     5e-6,   50e9 * IB_USABLE, 10e-6, 0};

// In the order help texts and messages list them.
static const device_spec *const devices[] = {&dev_a100, &dev_a800, &dev_a6000, &dev_l40s,
                                             &dev_h100, &dev_h200, &dev_b200};
#define N_DEVICES ((int)(sizeof devices / sizeof devices[0]))
static const char *const device_names[] = {"A100", "A800", "A6000", "L40S",
                                           "H100", "H200", "B200", NULL};

const char *const *zg_cluster_devices(void) { return device_names; }

typedef struct cluster_preset {
    const char *name;
    const device_spec *dev;
    int32_t world, per_node;
} cluster_preset;

static const cluster_preset presets[] = {
    {"8xA800", &dev_a800, 8, 8},       {"16xA800", &dev_a800, 16, 8},
    {"32xA6000", &dev_a6000, 32, 8},   {"8xH100", &dev_h100, 8, 8},
    {"8xH200", &dev_h200, 8, 8},       {"64xH100", &dev_h100, 64, 8},
    {"256xH100", &dev_h100, 256, 8},   {"1024xH100", &dev_h100, 1024, 8},
};
#define N_PRESETS ((int)(sizeof presets / sizeof presets[0]))

static const char *const preset_names[] = {"8xA800",   "16xA800",  "32xA6000",  "8xH100", "8xH200",
                                           "64xH100",  "256xH100", "1024xH100", "cpu:N",  NULL};

const char *const *zg_cluster_preset_names(void) { return preset_names; }

static void from_spec(zg_cluster *c, const char *name, const device_spec *d, int32_t world,
                      int32_t per_node) {
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "%s", name);
    snprintf(c->device, sizeof c->device, "%s", d->device);
    c->world_size = world;
    c->ranks_per_node = per_node;
    c->mem_bytes = d->mem_bytes;
    c->mem_usable_frac = MEM_USABLE;
    c->peak_flops = d->peak_flops;
    c->intra_bw = d->intra_bw;
    c->intra_lat = d->intra_lat;
    // A shared NIC: its line rate over the node's GPUs, then the usable factor (in this order,
    // so 32xA6000 keeps its value 25e9 / 8 * 0.8 to the bit).
    c->inter_bw = d->nic_shared ? d->inter_bw / per_node * IB_USABLE : d->inter_bw;
    c->inter_lat = d->inter_lat;
}

// "A100, A800, ..." and "8xA800, ..., cpu:N" for messages and help texts.
static void join(char *buf, size_t n, const char *const *names) {
    size_t k = 0;
    buf[0] = 0;
    for (int i = 0; names[i] && k < n; i++, k = strlen(buf))
        snprintf(buf + k, n - k, "%s%s", i ? ", " : "", names[i]);
}

#define CLUSTER_FORMS "NxGPU, NODESxGPUSxGPU, a preset, cpu:N, or a .json file"

void zg_cluster_help_print(FILE *f, const char *indent) {
    char gpus[256], pre[256];
    join(gpus, sizeof gpus, device_names);
    join(pre, sizeof pre, preset_names);
    if (!indent) indent = "";
    fprintf(f,
            "%s--cluster forms: NxGPU (e.g. 32xA800: %d GPUs per node, one node when N <= %d),\n"
            "%s  NODESxGPUSxGPU (e.g. 2x8xH100: 2 nodes of 8), a preset, cpu:N (N ranks on this\n"
            "%s  machine), or a .json file (docs/cost-model.md §1); N <= %d GPUs in all\n"
            "%sGPUs: %s (figures and sources: docs/cost-model.md §1)\n"
            "%spresets: %s\n",
            indent, ZG_CLUSTER_GPUS_PER_NODE, ZG_CLUSTER_GPUS_PER_NODE, indent, indent,
            ZG_CLUSTER_MAX_GPUS, indent, gpus, indent, pre);
}

static zg_status bad_form(zg_error *err, const char *name, const char *fmt, const char *part) {
    char what[320], gpus[256];
    snprintf(what, sizeof what, fmt, part);
    join(gpus, sizeof gpus, device_names);
    return zg_error_set(err, ZG_ERR_INVALID, "cluster '%s': %s (GPUs: %s; forms: " CLUSTER_FORMS
                        ")", name, what, gpus);
}

// A count part of NxGPU / NODESxGPUSxGPU: decimal digits only, 1..ZG_CLUSTER_MAX_GPUS, parsed in
// 64 bits with no overflow (longer digit strings are out of range, not wrapped).
static zg_status parse_count(const char *name, const char *s, size_t len, const char *what,
                             int64_t *out, zg_error *err) {
    char part[64];
    snprintf(part, sizeof part, "%.*s", (int)(len < 60 ? len : 60), s);
    if (len == 0) {
        char m[96];
        snprintf(m, sizeof m, "missing the %s before 'x'", what);
        return bad_form(err, name, "%s", m);
    }
    int64_t v = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < '0' || s[i] > '9') {
            char m[160];
            snprintf(m, sizeof m, "%s '%s' is not a whole number", what, part);
            return bad_form(err, name, "%s", m);
        }
        if (v <= ZG_CLUSTER_MAX_GPUS) v = v * 10 + (s[i] - '0');  // stops growing past the max
    }
    if (v < 1 || v > ZG_CLUSTER_MAX_GPUS) {
        char m[160];
        snprintf(m, sizeof m, "%s %s is out of range 1..%d", what, part, ZG_CLUSTER_MAX_GPUS);
        return bad_form(err, name, "%s", m);
    }
    *out = v;
    return ZG_OK;
}

// NxGPU or NODESxGPUSxGPU ('x' or 'X'; GPU names in any case).
static zg_status parse_form(const char *name, zg_cluster *c, zg_error *err) {
    const char *part[3];
    size_t len[3];
    int n = 0;
    const char *p = name;
    for (;;) {
        const char *x = p + strcspn(p, "xX");
        if (n == 3)
            return bad_form(err, name, "%s", "too many 'x'-separated parts (at most 3)");
        part[n] = p, len[n] = (size_t)(x - p), n++;
        if (!*x) break;
        p = x + 1;
    }
    if (n < 2) {
        char pre[200], m[300];
        join(pre, sizeof pre, preset_names);
        snprintf(m, sizeof m, "not NxGPU, NODESxGPUSxGPU or a preset (presets: %s)", pre);
        return bad_form(err, name, "%s", m);
    }
    const char *g = part[n - 1];
    if (len[n - 1] == 0) return bad_form(err, name, "%s", "missing the GPU after the last 'x'");
    const device_spec *d = NULL;
    for (int i = 0; i < N_DEVICES && !d; i++)
        if (strlen(devices[i]->device) == len[n - 1] &&
            !strncasecmp(g, devices[i]->device, len[n - 1]))
            d = devices[i];
    int64_t a = 0, b = 0;
    zg_status st = parse_count(name, part[0], len[0], n == 2 ? "GPU count" : "node count", &a, err);
    if (!st && n == 3) st = parse_count(name, part[1], len[1], "GPUs per node", &b, err);
    if (st) return st;
    if (!d) {
        char m[96];
        snprintf(m, sizeof m, "unknown GPU '%.*s'", (int)(len[n - 1] < 40 ? len[n - 1] : 40), g);
        return bad_form(err, name, "%s", m);
    }
    int64_t world = n == 2 ? a : a * b, per_node;
    if (n == 2) {
        per_node = a < ZG_CLUSTER_GPUS_PER_NODE ? a : ZG_CLUSTER_GPUS_PER_NODE;
    } else {
        per_node = b;
        if (b > ZG_CLUSTER_GPUS_PER_NODE) {
            char m[200];
            snprintf(m, sizeof m,
                     "%lld GPUs per node: %s nodes hold at most %d (describe other layouts in "
                     "a .json file)",
                     (long long)b, d->device, ZG_CLUSTER_GPUS_PER_NODE);
            return bad_form(err, name, "%s", m);
        }
        if (world > ZG_CLUSTER_MAX_GPUS) {
            char m[160];
            snprintf(m, sizeof m, "%lld x %lld = %lld GPUs is over the limit of %d",
                     (long long)a, (long long)b, (long long)world, ZG_CLUSTER_MAX_GPUS);
            return bad_form(err, name, "%s", m);
        }
    }
    char canon[64];
    if (n == 2)
        snprintf(canon, sizeof canon, "%lldx%s", (long long)a, d->device);
    else
        snprintf(canon, sizeof canon, "%lldx%lldx%s", (long long)a, (long long)b, d->device);
    from_spec(c, canon, d, (int32_t)world, (int32_t)per_node);
    return ZG_OK;
}

static double phys_ram_bytes(void) {
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || psz <= 0) return CPU_RAM_FALLBACK;
    return (double)pages * (double)psz;
}

static int32_t online_cores(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int32_t)n : 1;
}

// cpu:N — N MPI ranks on this machine, one node. Peak per rank: one core's SGEMM rate, shared
// when ranks outnumber cores; memory: CPU_RAM_SHARE of RAM over N ranks.
static zg_status cpu_preset(const char *name, zg_cluster *c, zg_error *err) {
    const char *num = name + 4;
    char *end = NULL;
    long n = strtol(num, &end, 10);
    if (!*num || *end || n < 1 || n > CPU_MAX_RANKS)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "cluster '%s': cpu:N needs a rank count N in 1..%d (e.g. cpu:4)", name,
                            CPU_MAX_RANKS);
    memset(c, 0, sizeof *c);
    snprintf(c->name, sizeof c->name, "cpu:%ld", n);
    snprintf(c->device, sizeof c->device, "cpu");
    c->world_size = (int32_t)n;
    c->ranks_per_node = (int32_t)n;
    c->mem_bytes = CPU_RAM_SHARE * phys_ram_bytes() / (double)n;
    c->mem_usable_frac = MEM_USABLE;
    double share = (double)online_cores() / (double)n;
    c->peak_flops = CPU_CORE_FLOPS * (share < 1 ? share : 1);
    c->intra_bw = c->inter_bw = CPU_SHM_BW;
    c->intra_lat = c->inter_lat = CPU_SHM_LAT;
    return ZG_OK;
}

zg_status zg_cluster_preset(const char *name, zg_cluster *c, zg_error *err) {
    if (!name || !*name)
        return zg_error_set(err, ZG_ERR_INVALID, "no cluster given (use --cluster NAME or FILE)");
    if (!strncmp(name, "cpu:", 4)) return cpu_preset(name, c, err);
    for (int i = 0; i < N_PRESETS; i++) {
        const cluster_preset *p = &presets[i];
        if (!strcmp(name, p->name)) {
            from_spec(c, p->name, p->dev, p->world, p->per_node);
            return ZG_OK;
        }
    }
    return parse_form(name, c, err);
}

zg_status zg_cluster_validate(const zg_cluster *c, zg_error *err) {
    const char *n = c->name[0] ? c->name : "(unnamed)";
    if (c->world_size < 1)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "cluster '%s': world_size = %d; need at least 1 rank", n,
                            c->world_size);
    if (c->ranks_per_node < 1 || c->ranks_per_node > c->world_size)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "cluster '%s': ranks_per_node = %d; must be in 1..world_size (%d)", n,
                            c->ranks_per_node, c->world_size);
    struct {
        const char *key;
        double v;
        int allow_zero;
    } f[] = {{"mem_bytes", c->mem_bytes, 0}, {"peak_flops", c->peak_flops, 0},
             {"intra_bw", c->intra_bw, 0},   {"inter_bw", c->inter_bw, 0},
             {"intra_lat", c->intra_lat, 1}, {"inter_lat", c->inter_lat, 1}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        if (!isfinite(f[i].v) || f[i].v < 0 || (!f[i].allow_zero && f[i].v == 0))
            return zg_error_set(err, ZG_ERR_INVALID, "cluster '%s': %s = %g; must be %s and finite",
                                n, f[i].key, f[i].v, f[i].allow_zero ? ">= 0" : "> 0");
    }
    if (!isfinite(c->mem_usable_frac) || c->mem_usable_frac <= 0 || c->mem_usable_frac > 1)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "cluster '%s': mem_usable_frac = %g; must be in (0, 1]", n,
                            c->mem_usable_frac);
    return ZG_OK;
}

zg_status zg_cluster_from_json(const cJSON *j, zg_cluster *c, zg_error *err) {
    if (!cJSON_IsObject(j)) return zg_error_set(err, ZG_ERR_INVALID, "cluster: expected an object");
    static const char *const known[] = {
        "preset",    "name",       "device",   "world_size", "ranks_per_node", "mem_bytes",
        "mem_usable_frac", "peak_flops", "intra_bw", "intra_lat", "inter_bw", "inter_lat", NULL};
    zg_status kst = zg_json_check_keys(j, known, "cluster", err);
    if (kst) return kst;
    char base[64] = "";
    zg_status st = zg_json_get_str(j, "preset", 0, base, sizeof base, "cluster", err);
    if (st) return st;
    int have_base = base[0] != 0;
    if (have_base) {
        if ((st = zg_cluster_preset(base, c, err))) return st;
    } else {
        memset(c, 0, sizeof *c);
        snprintf(c->name, sizeof c->name, "custom");
        snprintf(c->device, sizeof c->device, "custom");
        c->mem_usable_frac = MEM_USABLE;
    }
    if ((st = zg_json_get_str(j, "name", 0, c->name, sizeof c->name, "cluster", err))) return st;
    if ((st = zg_json_get_str(j, "device", 0, c->device, sizeof c->device, "cluster", err)))
        return st;
    int64_t world = c->world_size, rpn = have_base ? c->ranks_per_node : -1;
    if ((st = zg_json_get_int(j, "world_size", !have_base, &world, "cluster", err))) return st;
    if ((st = zg_json_get_int(j, "ranks_per_node", 0, &rpn, "cluster", err))) return st;
    if (world < INT32_MIN || world > INT32_MAX || rpn < INT32_MIN || rpn > INT32_MAX)
        return zg_error_set(err, ZG_ERR_INVALID,
                            "cluster '%s': world_size %lld / ranks_per_node %lld out of range",
                            c->name, (long long)world, (long long)rpn);
    // A base's node size shrinks to a smaller world_size given without ranks_per_node (one
    // node, as NxGPU with N < 8): {"preset":"8xA800","world_size":4} is 4 ranks in one node.
    if (have_base && !cJSON_HasObjectItem(j, "ranks_per_node") && world >= 1 && world < rpn)
        rpn = world;
    c->world_size = (int32_t)world;
    c->ranks_per_node = rpn == -1 ? c->world_size : (int32_t)rpn;  // default: one node
    struct {
        const char *key;
        double *p;
        int required;
    } f[] = {{"mem_bytes", &c->mem_bytes, 1},   {"mem_usable_frac", &c->mem_usable_frac, 0},
             {"peak_flops", &c->peak_flops, 1}, {"intra_bw", &c->intra_bw, 1},
             {"intra_lat", &c->intra_lat, 1},   {"inter_bw", &c->inter_bw, 0},
             {"inter_lat", &c->inter_lat, 0}};
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
        if ((st = zg_json_get_num(j, f[i].key, f[i].required && !have_base, f[i].p, "cluster",
                                  err)))
            return st;
    // A one-node cluster needs no inter-node link; default it to the intra-node one.
    if (!have_base && !cJSON_HasObjectItem(j, "inter_bw")) c->inter_bw = c->intra_bw;
    if (!have_base && !cJSON_HasObjectItem(j, "inter_lat")) c->inter_lat = c->intra_lat;
    return zg_cluster_validate(c, err);
}

cJSON *zg_cluster_to_json(const zg_cluster *c) {
    cJSON *j = cJSON_CreateObject();
    if (!j) return NULL;
    cJSON_AddStringToObject(j, "name", c->name);
    cJSON_AddStringToObject(j, "device", c->device);
    cJSON_AddNumberToObject(j, "world_size", c->world_size);
    cJSON_AddNumberToObject(j, "ranks_per_node", c->ranks_per_node);
    cJSON_AddNumberToObject(j, "mem_bytes", c->mem_bytes);
    cJSON_AddNumberToObject(j, "mem_usable_frac", c->mem_usable_frac);
    cJSON_AddNumberToObject(j, "peak_flops", c->peak_flops);
    cJSON_AddNumberToObject(j, "intra_bw", c->intra_bw);
    cJSON_AddNumberToObject(j, "intra_lat", c->intra_lat);
    cJSON_AddNumberToObject(j, "inter_bw", c->inter_bw);
    cJSON_AddNumberToObject(j, "inter_lat", c->inter_lat);
    return j;
}

static zg_status load_cluster(const char *name, const cJSON *j, void *c, zg_error *err) {
    return j ? zg_cluster_from_json(j, c, err) : zg_cluster_preset(name, c, err);
}

zg_status zg_cluster_load(const char *name_or_path, zg_cluster *c, zg_error *err) {
    return zg_json_load_named(name_or_path, "cluster", load_cluster, c, err);
}

double zg_cluster_mem_cap_bytes(const zg_cluster *c) {
    return c->mem_bytes * c->mem_usable_frac;
}

int32_t zg_cluster_nodes_spanned(const zg_cluster *c, const int32_t *ranks, int32_t n) {
    // Ranks of an option are usually a contiguous block, so count node changes along the list
    // and fall back to an exact distinct count only when nodes repeat out of order.
    if (n <= 0 || !ranks) return 0;
    int32_t count = 1, sorted = 1;
    for (int32_t i = 1; i < n; i++) {
        int32_t a = zg_cluster_node_of(c, ranks[i - 1]), b = zg_cluster_node_of(c, ranks[i]);
        if (b < a) sorted = 0;
        if (b != a) count++;
    }
    if (sorted) return count;
    count = 0;
    for (int32_t i = 0; i < n; i++) {
        int32_t ni = zg_cluster_node_of(c, ranks[i]), seen = 0;
        for (int32_t k = 0; k < i && !seen; k++) seen = zg_cluster_node_of(c, ranks[k]) == ni;
        count += !seen;
    }
    return count;
}
