// network.h — link-level network model (topo section 2): TPU v5e/v5p slices (open meshes and
// tori), GPU nodes (NVSwitch, PCIe) and multi-node InfiniBand. Collectives are mapped onto
// directed links; bytes are summed per directed link over all concurrent groups (contention),
// and each collective pays a latency term alpha per algorithm step. Used by AoiZora's pricing
// and placement search; usable by Zellige for node-aware prices.
//
// Device ids: grids number chips x-fastest, id = x + X*(y + Y*z). Switched networks number
// GPUs g-fastest, id = g + G*(s + S*node) (G GPUs per switch, S switches per node).
//
// Collective byte convention (the same one AoiZora's evidence uses): `bytes` is the full buffer
// per device over the group: the all-gather result, the reduce-scatter operand, the all-reduce
// buffer, the all-to-all buffer, the collective-permute buffer per source.
#ifndef ZG_TOPO_NETWORK_H
#define ZG_TOPO_NETWORK_H

#include "core/core.h"

#define ZG_NET_MAX_DIMS 3
#define ZG_NET_MAX_DEVICES 4096

typedef enum {
    ZG_COLL_ALL_GATHER = 0,
    ZG_COLL_REDUCE_SCATTER,
    ZG_COLL_ALL_REDUCE,
    ZG_COLL_ALL_TO_ALL,
    ZG_COLL_PERMUTE,  // collective-permute: source -> target pairs
    ZG_COLL_N
} zg_coll_kind;

// "all-gather", "reduce-scatter", "all-reduce", "all-to-all", "collective-permute".
const char *zg_coll_kind_name(zg_coll_kind k);
zg_status zg_coll_kind_parse(const char *s, zg_coll_kind *out, zg_error *err);

typedef enum {
    ZG_NET_GRID = 0,  // TPU ICI: nearest-neighbour links, wraparound per dimension
    ZG_NET_SWITCHED,  // GPUs on a switch (NVSwitch, or PCIe switches joined by an uplink) + IB
} zg_net_kind;

typedef struct zg_net {
    char name[64];
    char device[32];           // "tpu-v5e", "tpu-v5p", "h100", "a6000"
    zg_net_kind kind;
    int32_t n_devices;
    int32_t ndims;             // grid: 2 or 3; switched: 3 (gpus/switch, switches/node, nodes)
    int32_t dims[ZG_NET_MAX_DIMS];
    int32_t wrap[ZG_NET_MAX_DIMS];  // grid: 1 = wraparound link on this dimension (a ring)
    double link_bw;            // bytes/s per direction per link (grid), per GPU to its switch
    double link_lat;           // seconds per link traversed
    double up_bw;              // switched: bytes/s per direction between PCIe switches of a node
    double inter_bw;           // switched: bytes/s per direction per GPU NIC across nodes
    double inter_lat;          // seconds per inter-node traversal
    double alpha[ZG_COLL_N];   // seconds per algorithm step, per collective kind
    double eff[ZG_COLL_N];     // achieved fraction of link bandwidth per kind (1 = nominal)
    int32_t route_split;       // grid: 1 = split multi-dimension routes over all dimension orders
    // chips
    double peak_flops;         // dense bf16 FLOP/s per device
    double flops_eff;          // achieved fraction of peak for GEMM/attention (calibratable)
    double hbm_bw;             // bytes/s per device
    double hbm_bytes;          // memory per device
    double hbm_usable_frac;    // fraction usable by the program
    // The user's device list (optional, "device_coords" in a topology JSON): when has_user_order,
    // user device i (e.g. jax.devices()[i]) is physical chip user_to_phys[i] and chip p is user
    // device phys_to_user[p]; plans then name chips by the user's indices.
    int32_t has_user_order;
    int16_t user_to_phys[ZG_NET_MAX_DEVICES], phys_to_user[ZG_NET_MAX_DEVICES];
} zg_net;

// The user's index of physical chip dev (dev itself without a device list).
int32_t zg_net_user_index(const zg_net *net, int32_t dev);
// Sets the user's device list from coordinates: coords[i * ndims + d] is coordinate d of user
// device i (grid: x, y[, z]; switched: gpu, switch, node). Every chip exactly once.
zg_status zg_net_set_device_coords(zg_net *net, const int32_t *coords, int32_t n_devices,
                                   int32_t ndims, zg_error *err);

// Presets: v5e-4 (2x2), v5e-8 (2x4), v5e-16 (4x4), v5e-256 (16x16 torus), v5p-4 (2x2x1),
// v5p-8 (2x2x2), v5p-64 (4x4x4 torus), h100x8 (NVSwitch), pcie8 (8 GPUs, 2 PCIe switches),
// h100x8-ib:N (N NVSwitch nodes over IB). Also "v5e:AxB" and "v5p:AxBxC" for any sub-slice
// (wraparound only on a dimension of 16 for v5e, on all dimensions of a 4x4x4+ cube for v5p).
zg_status zg_net_preset(const char *name, zg_net *net, zg_error *err);
const char *const *zg_net_preset_names(void);
// A preset name or a JSON file {"preset":"v5e-8", "link_bw":4.5e10, "alpha":{"all-gather":2e-6},
// "eff":{...}, "peak_flops":..., "device_coords":[[x,y],...], ...}: fields given override the
// preset; device_coords lists the user's devices by coordinates (zg_net_set_device_coords).
zg_status zg_net_load(const char *name_or_path, zg_net *net, zg_error *err);
zg_status zg_net_from_json(const cJSON *j, zg_net *net, zg_error *err);
cJSON *zg_net_to_json(const zg_net *net);
zg_status zg_net_validate(const zg_net *net, zg_error *err);

// Coordinates of a device (grid: x,y,z; switched: gpu, switch, node).
void zg_net_coords(const zg_net *net, int32_t dev, int32_t coords[ZG_NET_MAX_DIMS]);
int32_t zg_net_device_at(const zg_net *net, const int32_t coords[ZG_NET_MAX_DIMS]);

// ---- links and routes -----------------------------------------------------------------------
// Directed links have dense ids 0..zg_net_n_links-1; some ids are unused (bandwidth 0).
int32_t zg_net_n_links(const zg_net *net);
double zg_net_link_bw(const zg_net *net, int32_t link);   // 0 if the link does not exist
// "(0,1)->(1,1)" for grid links, "gpu3->nvswitch", "sw0->sw1@node0", "nic5->ib".
void zg_net_link_name(const zg_net *net, int32_t link, char *buf, size_t bufsz);

typedef struct zg_net_hop {
    int32_t link;
    double frac;  // share of the flow's bytes on this link (routes split over orders/directions)
} zg_net_hop;
// Route src -> dst. Grid: dimension-order, the shorter way around a wrapped dimension (ties
// split in half), and with route_split the bytes spread evenly over all dimension orders.
// Returns the number of distinct links written (at most ZG_NET_MAX_HOPS; hops must hold that
// many) and sets *path_lat to the latency of one path (link_lat per link, inter_lat per
// node crossing). src == dst gives 0 hops.
#define ZG_NET_MAX_HOPS 512
int32_t zg_net_route(const zg_net *net, int32_t src, int32_t dst, zg_net_hop *hops,
                     double *path_lat);

// ---- collective pricing ---------------------------------------------------------------------
typedef struct zg_net_cost {
    double time;         // bw_time + alpha_time + lat_time
    double bw_time;      // sum over phases of max over links of bytes / (bw * eff)
    double alpha_time;   // alpha[kind] * steps
    double lat_time;     // latency of the longest path, summed over phases
    int32_t steps;       // algorithm steps
    int32_t phases;      // sequential phases (per-dimension for multi-axis groups)
    double max_link_bytes;    // the heaviest link's bytes in the slowest phase
    int32_t bottleneck_link;  // that link (-1 if no traffic)
} zg_net_cost;

// Prices one collective instance: n_groups concurrent groups of group_size physical devices
// (members is n_groups x group_size; for ZG_COLL_PERMUTE group_size is 2 and each group is a
// (source, target) pair). All groups run at once, so their bytes add up on shared links.
// Algorithms: per group, if the members form a sub-grid (Cartesian product of coordinates) the
// collective runs in per-dimension phases (the cheapest phase order), each phase a ring on a
// wrapped full dimension (or any switched dimension) and a bidirectional line otherwise;
// other groups run a line over the members in the given order. All-reduce = reduce-scatter +
// all-gather. All-to-all and permute send point-to-point flows along routes.
// link_bytes (optional, zg_net_n_links entries) accumulates the bytes put on each link.
zg_status zg_net_coll_price(const zg_net *net, zg_coll_kind kind, double bytes,
                            int32_t n_groups, int32_t group_size, const int32_t *members,
                            double *link_bytes, zg_net_cost *out, zg_error *err);

// ---- calibration ----------------------------------------------------------------------------
// One measured collective on the real machine.
typedef struct zg_net_sample {
    zg_coll_kind kind;
    int32_t n_groups, group_size;
    const int32_t *members;  // physical device ids
    double bytes;
    double measured_s;
} zg_net_sample;
// Least-squares fit, per collective kind with >= 2 samples, of eff[kind] and alpha[kind] so
// that predicted = bw_time(eff=1)/eff + alpha*steps + lat_time matches the measurements.
// Kinds without enough samples keep their values. *rms_rel_err (optional) gets the relative
// RMS error after the fit.
zg_status zg_net_calibrate(zg_net *net, const zg_net_sample *samples, int32_t n,
                           double *rms_rel_err, zg_error *err);

#endif
