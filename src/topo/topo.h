// topo — devices, nodes, links: GPU clusters for Zellige's cost model, and (section 2) the
// link-level network model (TPU tori, GPU nodes, routing, link loads) shared with AoiZora.
//
// May include: core.
#ifndef ZG_TOPO_H
#define ZG_TOPO_H

#include "core/core.h"

// =============================================================================================
// 1. Clusters: ranks grouped in nodes, alpha-beta links inside and across nodes.

typedef struct zg_cluster {
    char name[64];            // "16xA800", "cpu:4", or the JSON file's "name"
    char device[32];          // a zg_cluster_devices() name, "cpu", or the JSON file's
    int32_t world_size;       // ranks (one rank per device)
    int32_t ranks_per_node;   // consecutive ranks share a node: node(r) = r / ranks_per_node
    double mem_bytes;         // device memory per rank
    double mem_usable_frac;   // fraction usable by the framework (allocator, context excluded)
    double peak_flops;        // dense bf16 FLOP/s per rank (fp32 for cpu)
    double intra_bw;          // bytes/s per rank per direction inside a node
    double intra_lat;         // seconds per message inside a node
    double inter_bw;          // bytes/s per rank per direction across nodes
    double inter_lat;         // seconds per message across nodes
} zg_cluster;

// A cluster by name: a preset (8xA800, 16xA800, 32xA6000, 8xH100, 8xH200, 64xH100, 256xH100,
// 1024xH100), NxGPU (N GPUs, ZG_CLUSTER_GPUS_PER_NODE per node, one node when N is smaller; a
// last node may be partial), NODESxGPUSxGPU (nodes of GPUS each, GPUS <= 8), or cpu:N. GPU is
// one of zg_cluster_devices() (any case); counts are 1..ZG_CLUSTER_MAX_GPUS. A preset and the
// NxGPU spelling of it give identical clusters. Values and sources: docs/cost-model.md §1.
// cpu:N (N = 1..4096) describes N ranks on this machine (memory from its RAM, so it is
// machine-dependent); the profiler replaces its numbers.
#define ZG_CLUSTER_GPUS_PER_NODE 8
#define ZG_CLUSTER_MAX_GPUS 65536
zg_status zg_cluster_preset(const char *name, zg_cluster *c, zg_error *err);
// NULL-terminated; the entry "cpu:N" stands for the cpu:<ranks> family.
const char *const *zg_cluster_preset_names(void);
// NULL-terminated GPU names of the device table ("A100", "A800", "A6000", "L40S", "H100", ...).
const char *const *zg_cluster_devices(void);
// Prints the accepted --cluster forms, the GPUs and the presets (from the tables), each line
// starting with indent; for help texts.
void zg_cluster_help_print(FILE *f, const char *indent);
// Any name zg_cluster_preset takes, or a .json file path.
zg_status zg_cluster_load(const char *name_or_path, zg_cluster *c, zg_error *err);
// {"preset":"16xA800", ...overrides} or a full description (docs/cost-model.md §1); validated.
zg_status zg_cluster_from_json(const cJSON *j, zg_cluster *c, zg_error *err);
cJSON *zg_cluster_to_json(const zg_cluster *c);
zg_status zg_cluster_validate(const zg_cluster *c, zg_error *err);

static inline int32_t zg_cluster_node_of(const zg_cluster *c, int32_t rank) {
    return rank / c->ranks_per_node;
}
static inline int32_t zg_cluster_n_nodes(const zg_cluster *c) {
    return (c->world_size + c->ranks_per_node - 1) / c->ranks_per_node;
}
// Number of distinct nodes a rank list spans (1 = stays inside a node).
int32_t zg_cluster_nodes_spanned(const zg_cluster *c, const int32_t *ranks, int32_t n);

// The memory cap of one rank, in bytes: device memory minus the reserved margin,
// mem_bytes * mem_usable_frac. The margin (1 - mem_usable_frac, 5% on every built-in device) is
// memory a training process has on paper but cannot fill: the CUDA context (~1%) and the caching
// allocator's fragmentation (~4%) (docs/cost-model.md §1, "Memory"). This is the one cap: a
// rank's total (the pricer's placement-independent base plus its placements) is compared with
// it by every planner, the validator, the simulator, the report and every message, and plans and
// results carry it as their `mem_cap` field. What placements alone may use is the cap minus the
// base (zg_pricer_mem_room).
double zg_cluster_mem_cap_bytes(const zg_cluster *c);

// =============================================================================================
// 2. Link-level network model (AoiZora; also usable for Zellige's node-aware prices).
//    Declared in topo/network.h to keep this header short; see that file.

#endif
