// planner_stage1.c — stage-1 layouts from an outside MIP solver, as a yardstick for the planner.
//
//   build/bin/bench_planner_stage1 --export DIR [--settings C:L,...] [--batches N] [--mixes M]
//   python3 bench/stage1_mip.py DIR [--time-limit S]
//   build/bin/bench_planner_stage1 --stage DIR [same settings] [--best FILE [--best-update]]
//
// --export writes the stage-1 model (zel_stage1_model: anchors by the cut, fillers as fluid
// work) of each batch bench_planner_quality plans (same settings, mixes and draws) to
// DIR/<cluster>_<load>_<k>.model.json. stage1_mip.py solves each as a positional MIP (OR-Tools
// SCIP) and writes the layout it finds to <...>.layout.json. --stage places the fillers on each
// layout with zellige's stage 2 (zel_filler_place) and prints the plan's makespan per batch next
// to the best known one (FILE, bench/data/planner_best.json); --best-update records it where it
// is lower. The staged plans are real plans under the same prices (legal options, memory
// checked by stage 2), so they bound the optimum from above; they say nothing about lower bounds.
//
// With --relax, --export writes zel_relax_model instead: joint's relaxation (the fillers as
// fluid work of their least area at every filler density), whose optimum is below every plan's
// makespan; stage1_mip.py solves it the same way, and --stage then reads the MIP's proven bound
// ("bound": the solver's dual bound, less 1e-6 relative for its tolerances), checks it against the
// layout's objective in C and the best known plan, and --lb FILE --lb-update records it where it
// is higher (bench/data/planner_lb.json: bench_planner_quality --lb reads it). Its layout also
// stages into a plan (the relaxation's anchors are real placements), reported and, with
// --best-update, recorded like the stage-1 layouts'.
//
// --exact-extra N moves the cut so that the N next-priced groups are exact too (both models;
// the relaxation stays one: any split of the groups into exact and fluid is one).
//
// --relax --search S proves the bound with our own search instead of a MIP solver: joint's
// relaxation search (zel_relax_bound: the exact branch-and-bound, then target probes, then the
// pattern bound) given S seconds per batch rather than joint's share of 0.3 s. It reports the
// bound, whether the relaxation was solved outright, and the same check against the best known
// plan and its own staged layout (a bound above either is INVALID: exit status 1, nothing
// written); --lb-update records it where it is higher. The search's best layout is staged like
// the MIP's (--best-update). --only LIST restricts any mode to those batch indices.
#include <math.h>

#include "zel_bench.h"

static const char *usage =
    "usage: bench_planner_stage1 [--relax] --export DIR | --stage DIR\n"
    "                            [--best FILE [--best-update]] [--lb FILE [--lb-update]]\n"
    "                            [--exact-extra N] [--only LIST]\n"
    "       bench_planner_stage1 --relax --search S [--best FILE [--best-update]]\n"
    "                            [--lb FILE [--lb-update]]\n"
    "                            [--settings CLUSTER:LOAD,...] [--batches N] [--mixes LIST]\n"
    "--export DIR: write each batch's stage-1 model to DIR/<cluster>_<load>_<k>.model.json\n"
    "--stage DIR: stage the layouts DIR/<...>.layout.json (bench/stage1_mip.py) into plans\n"
    "--relax: joint's relaxation model instead; --stage reads the MIP's proven bound (a lower\n"
    "    bound on every plan), checks it against --best and against its own layout staged into\n"
    "    a plan (--best-update records that plan where it is better), --lb-update records it\n"
    "--exact-extra N: the N groups priced next below the cut exact as well\n"
    "--relax --search S: prove each batch's bound with joint's relaxation search given S\n"
    "    seconds (no MIP solver); --lb-update records it where it is higher; the search's best\n"
    "    layout is staged into a plan (--best-update records it where it is better)\n"
    "--only LIST: only these batch indices (comma-separated)\n"
    "batches as bench_planner_quality's (defaults: 32xA6000:high, 100, V35,...,V60).\n";

static cJSON *model_json(const zel_model *m) {
    cJSON *j = cJSON_CreateObject();
    cJSON_AddNumberToObject(j, "N", m->n_ranks);
    cJSON_AddNumberToObject(j, "cap", m->mem_room);
    cJSON_AddNumberToObject(j, "extra_area", m->extra_area);
    cJSON_AddNumberToObject(j, "free_area", m->free_area);
    cJSON_AddNumberToObject(j, "fill_mem", m->fill_mem);
    cJSON *x = cJSON_AddArrayToObject(j, "xfl");
    for (int32_t k = 0; k < m->n_xfl; k++) {
        double v[2] = {m->xfl_free[k], m->xfl_mem[k]};
        cJSON_AddItemToArray(x, cJSON_CreateDoubleArray(v, 2));
    }
    cJSON_AddItemToObject(j, "base_load", cJSON_CreateDoubleArray(m->base_load, m->n_ranks));
    cJSON_AddItemToObject(j, "base_mem", cJSON_CreateDoubleArray(m->base_mem, m->n_ranks));
    cJSON *gs = cJSON_AddArrayToObject(j, "groups");
    for (int32_t g = 0; g < m->n_grps; g++) {
        const zel_grp *G = &m->grps[g];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddNumberToObject(o, "count", (double)G->count);
        cJSON *os = cJSON_AddArrayToObject(o, "opts");  // [start, degree, time, mem]
        for (int32_t q = 0; q < G->n_opts; q++) {
            double v[4] = {G->opts[q].start, G->opts[q].degree, G->opts[q].time, G->opts[q].mem};
            cJSON_AddItemToArray(os, cJSON_CreateDoubleArray(v, 4));
        }
        cJSON_AddItemToArray(gs, o);
    }
    return j;
}

// Layout file -> solution of m: "layout": [[g, option index, start, degree], ...], one entry
// per unit; the start and degree must match the option (the model was exported by this
// build). Returns 0 with a message in why on any mismatch.
static int layout_read(const zel_model *m, const cJSON *lay, zel_sol *s, char *why, size_t n) {
    int64_t *next = calloc((size_t)m->n_grps + 1, sizeof(int64_t));
    const cJSON *it;
    int ok = next != NULL, cnt = 0;
    cJSON_ArrayForEach(it, lay) {
        if (!ok) break;
        int g = cJSON_GetArrayItem(it, 0) ? cJSON_GetArrayItem(it, 0)->valueint : -1;
        int q = cJSON_GetArrayItem(it, 1) ? cJSON_GetArrayItem(it, 1)->valueint : -1;
        int a = cJSON_GetArrayItem(it, 2) ? cJSON_GetArrayItem(it, 2)->valueint : -1;
        int d = cJSON_GetArrayItem(it, 3) ? cJSON_GetArrayItem(it, 3)->valueint : -1;
        if (g < 0 || g >= m->n_grps || q < 0 || q >= m->grps[g].n_opts ||
            m->grps[g].opts[q].start != a || m->grps[g].opts[q].degree != d ||
            next[g] >= m->grps[g].count) {
            snprintf(why, n, "entry %d (group %d, option %d, [%d,+%d)) is not an option of this "
                             "model or one unit too many: export again with this build", cnt, g,
                     q, a, d);
            ok = 0;
            break;
        }
        s->opt[m->unit0[g] + next[g]++] = q;
        cnt++;
    }
    if (ok && cnt != m->n_units) {
        snprintf(why, n, "%d units in the layout, the model has %lld", cnt,
                 (long long)m->n_units);
        ok = 0;
    }
    free(next);
    if (ok) zel_sol_canon(m, s);
    return ok;
}

// Stage 2 on the anchors' options in choice[] (-1 for the rest, whose groups stage 2 places):
// the plan's makespan, INFINITY if stage 2 fails. choice is completed in place.
static double stage_choice(const zg_problem *pr, const zg_batch *b, int32_t *choice) {
    int32_t *fil = calloc((size_t)pr->n_groups + 1, sizeof(int32_t));
    unsigned char *isf = calloc((size_t)pr->n_groups + 1, 1);
    double *L = calloc(4 * (size_t)pr->world_size, sizeof(double));
    double ms = INFINITY;
    if (fil && isf && L) {
        double *H = L + pr->world_size;
        int32_t nf = 0;
        for (int32_t i = 0; i < pr->n_seqs; i++) {
            int32_t g = pr->group_of[i];
            if (choice[i] < 0) {
                isf[g] = 1;
                continue;
            }
            const zg_option *o = &pr->groups[g].opts[choice[i]];
            for (int32_t r = o->start; r < o->start + zg_option_degree(o); r++)
                L[r] += o->time, H[r] += o->mem;
        }
        for (int32_t g = 0; g < pr->n_groups; g++)
            if (isf[g]) fil[nf++] = g;
        zg_error err;
        // as zel_two_stage: the paper's rule, then by density where memory binds
        double *L0 = L + 2 * pr->world_size, *H0 = L0 + pr->world_size;
        int32_t *alt = malloc(((size_t)pr->n_seqs + 1) * sizeof(int32_t));
        memcpy(L0, L, 2 * sizeof(double) * (size_t)pr->world_size);
        if (alt) memcpy(alt, choice, sizeof(int32_t) * (size_t)pr->n_seqs);
        if (zel_filler_place(pr, b, fil, nf, L, H, choice, &err) == ZG_OK) {
            ms = zel_choice_makespan(pr, choice, NULL, NULL);
            if (alt && zel_filler_memory_binds(pr, fil, nf, L, H) &&
                zel_filler_place_dense(pr, b, fil, nf, L0, H0, alt, &err) == ZG_OK) {
                double m2 = zel_choice_makespan(pr, alt, NULL, NULL);
                if (m2 < ms * (1 - 1e-12))
                    ms = m2, memcpy(choice, alt, sizeof(int32_t) * (size_t)pr->n_seqs);
            }
        }
        free(alt);
    }
    free(fil), free(isf), free(L);
    return ms;
}

// Stage 2 on layout s of m (pr's stage-1 model): the plan's makespan, INFINITY if it fails.
static double stage_layout(const zg_problem *pr, const zg_batch *b, const zel_model *m,
                           const zel_sol *s) {
    int32_t *choice = malloc(((size_t)pr->n_seqs + 1) * sizeof(int32_t));
    double ms = INFINITY;
    if (choice) {
        for (int32_t i = 0; i < pr->n_seqs; i++) choice[i] = -1;
        zel_sol_to_choice(m, pr, s, choice);
        ms = stage_choice(pr, b, choice);
    }
    free(choice);
    return ms;
}

// --search: joint's relaxation search on pr for secs seconds (the cut in ctx). Prints the bound
// against the best known plan bk (0: none) and the recorded one, and stages the search's layout
// (*staged: its makespan, INFINITY if none); returns 0 if the bound is above bk or *staged
// (INVALID), 2 if it is above old (and then writes it into li when given), 1 otherwise, -1 on
// an error.
static int search_bound(const zg_plan_ctx *ctx, const zg_problem *pr, const zg_batch *b,
                        double secs, double bk, double old, cJSON *li, double *staged,
                        const char *name, const char *load, int k, const char *mix,
                        zg_error *err) {
    zel_limits lim = {0, secs, 0, 0, 0};
    double lb = 0, t0 = zg_time_now();
    int complete = 0;
    int64_t nodes = 0;
    int32_t *lay = malloc(((size_t)pr->n_seqs + 1) * sizeof(int32_t));
    // the pattern bound after the search, from there to the best known plan, in a quarter
    if (!lay || zel_relax_bound(ctx, pr, &lim, 0.25 * secs, bk > 0 ? bk : INFINITY, &lb,
                                &complete, &nodes, lay, err)) {
        fprintf(stderr, "bench_planner_stage1: %s\n", lay ? err->msg : "out of memory");
        free(lay);
        return -1;
    }
    // the search's layout places real anchors: stage 2 makes it a plan
    *staged = INFINITY;
    int any = 0;
    for (int32_t i = 0; i < pr->n_seqs; i++) any |= lay[i] >= 0;
    if (any) *staged = stage_choice(pr, b, lay);
    free(lay);
    int ok = (bk == 0 || lb <= bk) && lb <= *staged;
    printf("%s:%s batch %d %s relaxation search bound %.6f (%s, %lld nodes, %.1f s) best plan "
           "%.9g (%+.4f%%) recorded %.6f staged %.9g%s\n", name, load, k, mix, lb,
           complete ? "solved" : "time limit", (long long)nodes, zg_time_now() - t0, bk,
           bk > 0 ? 100 * (bk / lb - 1) : 0.0, old, *staged, ok ? "" : "  INVALID");
    fflush(stdout);
    if (!ok) return 0;
    if (lb <= old) return 1;
    if (li) cJSON_SetNumberValue(li, lb);
    return 2;
}

// Writes j to path (atomic); 1 (printed, naming the option) on failure.
static int write_back(const char *path, const cJSON *j, const char *flag) {
    zg_error err;
    if (!zg_json_write_file(path, j, 1, &err)) return 0;
    fprintf(stderr, "bench_planner_stage1: %s: %s\n", flag, err.msg);
    return 1;
}

int main(int argc, char **argv) {
    zb_qargs q = {"32xA6000:high", "V35,V40,V45,V50,V55,V60", 100};
    const char *export_dir = NULL, *stage_dir = NULL, *only = "";
    int relax = 0, extra = 0;
    zb_files fl = {NULL, NULL, 0, 0};
    double search_s = 0;
    zb_opt opts[] = {ZB_QARGS_OPTS(q), ZB_FILES_OPTS(fl), {"--export", 'p', &export_dir, 0},
                     {"--stage", 'p', &stage_dir, 0}, {"--relax", 'f', &relax, 0},
                     {"--search", 'd', &search_s, 0}, {"--only", 'p', &only, 0},
                     {"--exact-extra", 'i', &extra, 0}};
    int ex = zb_parse("bench_planner_stage1", usage, opts, ZB_NOPTS(opts), argc, argv);
    if (ex >= 0) return ex;
    char only_buf[1024];
    snprintf(only_buf, sizeof only_buf, "%s", only);
    char *settings = q.settings, *mixes = q.mixes;
    int batches = q.batches;
    const char *best_path = fl.best_path, *lb_path = fl.lb_path;
    int best_update = fl.best_update, lb_update = fl.lb_update;
    int modes = !!export_dir + !!stage_dir + (search_s > 0);
    if (modes != 1 || batches < 1 || (best_update && !best_path) || (lb_update && !lb_path) ||
        (!relax && (lb_path || search_s > 0)) || extra < 0) {
        fprintf(stderr, "bench_planner_stage1: give one of --export DIR, --stage DIR and --relax "
                        "--search S (S > 0), --batches >= 1, --best FILE with --best-update, "
                        "--lb FILE with --lb-update and --relax, "
                        "--exact-extra >= 0\n%s", usage);
        return 1;
    }
    // --only: a mask over the batch indices
    char *only_items[1024];
    int n_only = only_buf[0] ? zb_split(only_buf, only_items, 1024) : 0;
    unsigned char *pick = calloc((size_t)batches, 1);
    if (!pick) return 1;
    for (int i = 0; i < n_only; i++) {
        char *end;
        long k = strtol(only_items[i], &end, 10);
        if (*end || k < 0 || k >= batches) {
            fprintf(stderr, "bench_planner_stage1: --only: '%s' is not a batch index in [0, %d)\n",
                    only_items[i], batches);
            free(pick);
            return 1;
        }
        pick[k] = 1;
    }
    for (int k = 0; k < batches && !n_only; k++) pick[k] = 1;
    cJSON *best = best_open(best_path, mixes, best_update);
    if (best_path && !best) return 1;
    cJSON *lbf = lb_open(lb_path, mixes, lb_update);
    if (lb_path && !lbf) {
        cJSON_Delete(best);
        return 1;
    }
    char *st[16], *mx[16];
    int nst = zb_split(settings, st, 16), nmx = zb_split(mixes, mx, 16);
    int rc = 0;
    for (int s = 0; s < nst && !rc; s++) {
        char name[64];
        const char *load = zb_setting(st[s], name);
        zb_env e;
        zg_error err;
        if (zb_env_init(&e, name, &err)) return zb_fail("bench_planner_stage1", &err);
        int64_t tpr = !strcmp(load, "low") ? e.low : e.high;
        cJSON *brow = best ? best_row(best, st[s], batches) : NULL;
        cJSON *lrow = lbf ? best_row(lbf, st[s], batches) : NULL;
        int staged = 0, better = 0, missing = 0, bad = 0, plans = 0;
        double gsum = 0, gmin = INFINITY;
        for (int k = 0; k < batches && !rc; k++) {
            if (!pick[k]) continue;
            zg_batch b;
            zg_problem pr;
            zel_model m;
            if (zb_quality_batch(&e, tpr, mx, nmx, k, &b, &err) ||
                zg_problem_build(&e.ctx, &b, &pr, &err))
                return zb_fail("bench_planner_stage1", &err);
            e.ctx.opts.anchor_cut_s = 0;
            if (extra > 0) {  // the cut between the N-th group below it and the next
                if (zel_stage1_model(&e.ctx, &pr, &m, &err))
                    return zb_fail("bench_planner_stage1", &err);
                int32_t a = m.n_grps + extra - 1;  // groups: whole price descending
                zel_model_free(&m);
                if (a + 1 < pr.n_groups)
                    e.ctx.opts.anchor_cut_s =
                        sqrt(pr.groups[a].whole_time * pr.groups[a + 1].whole_time);
                else
                    e.ctx.opts.anchor_cut_s = 0.5 * pr.groups[pr.n_groups - 1].whole_time;
            }
            // the batch's best known plan (0: none) and recorded bound, for every mode but export
            cJSON *it = brow ? cJSON_GetArrayItem(brow, k) : NULL;
            double bk = cJSON_IsNumber(it) && it->valuedouble > 0 ? it->valuedouble : 0;
            cJSON *li = lrow ? cJSON_GetArrayItem(lrow, k) : NULL;
            double old = cJSON_IsNumber(li) ? li->valuedouble : 0;
            if (search_s > 0) {
                double ms = INFINITY;
                int v = search_bound(&e.ctx, &pr, &b, search_s, bk, old, lb_update ? li : NULL,
                                     &ms, name, load, k, mx[k % nmx], &err);
                if (v < 0) rc = 1;
                else if (v == 0) bad++;
                else staged++, better += v == 2;
                if (v > 0 && ms < INFINITY && (bk == 0 || ms < bk)) {
                    plans += bk > 0;  // (none known: recorded, not counted as better)
                    if (best_update && it)
                        cJSON_ReplaceItemInArray(brow, k, cJSON_CreateNumber(ms));
                }
                zg_problem_free(&pr);
                zg_batch_free(&b);
                continue;
            }
            if ((relax ? zel_relax_model : zel_stage1_model)(&e.ctx, &pr, &m, &err))
                return zb_fail("bench_planner_stage1", &err);
            char path[1024];
            snprintf(path, sizeof path, "%s/%s_%s_%d.%s.json", export_dir ? export_dir : stage_dir,
                     name, load, k, export_dir ? "model" : "layout");
            if (export_dir) {
                cJSON *j = model_json(&m);
                if (zg_json_write_file(path, j, 0, &err)) {
                    fprintf(stderr, "bench_planner_stage1: %s\n", err.msg);
                    rc = 1;
                }
                cJSON_Delete(j);
            } else {
                cJSON *j = NULL;
                FILE *f = fopen(path, "r");
                if (f) fclose(f);
                zel_sol sol = {0};
                char why[256] = "";
                if (!f) {
                    missing++;
                } else if (zg_json_read_file(path, &j, &err) || zel_sol_alloc(&m, &sol, &err)) {
                    fprintf(stderr, "bench_planner_stage1: %s: %s\n", path, err.msg);
                    rc = 1;
                } else if (!layout_read(&m, cJSON_GetObjectItem(j, "layout"), &sol, why,
                                        sizeof why)) {
                    fprintf(stderr, "bench_planner_stage1: %s: %s\n", path, why);
                    rc = 1;
                } else {
                    // the layout's objective in C and its plan (stage 2 on its anchors)
                    double T;
                    int64_t K;
                    int fits = zel_sol_eval(&m, sol.opt, NULL, NULL, &T, &K);
                    double ms = fits ? stage_layout(&pr, &b, &m, &sol) : INFINITY;
                    if (relax) {
                        const cJSON *jb = cJSON_GetObjectItem(j, "bound");
                        const cJSON *jo = cJSON_GetObjectItem(j, "objective");
                        double bd = cJSON_IsNumber(jb) ? jb->valuedouble * (1 - 1e-6) : 0;
                        double ob = cJSON_IsNumber(jo) ? jo->valuedouble : INFINITY;
                        // the MIP's layout must score the same in C (the same model), and a
                        // lower bound above a real plan (its own staged one too) would be a
                        // wrong model
                        int ok = fits && fabs(T - ob) <= 1e-6 * ob && (bk == 0 || bd <= bk) &&
                                 bd <= ms;
                        printf("%s:%s batch %d %s relaxation bound %.6f (layout %.6f, C %.6f) "
                               "best plan %.9g (%+.4f%%) recorded %.6f staged %.9g%s\n", name,
                               load, k, mx[k % nmx], bd, ob, fits ? T : INFINITY, bk,
                               bk > 0 ? 100 * (bk / bd - 1) : 0.0, old, ms,
                               ok ? "" : "  INVALID");
                        if (ok && ms < INFINITY && (bk == 0 || ms < bk) && best_update && it)
                            cJSON_ReplaceItemInArray(brow, k, cJSON_CreateNumber(ms));
                        if (!ok) {
                            bad++;
                        } else {
                            staged++;
                            if (bk > 0) gsum += bk / bd - 1;
                            if (bd > old) {
                                better++;
                                if (lb_update && li)
                                    cJSON_ReplaceItemInArray(lrow, k, cJSON_CreateNumber(bd));
                            }
                        }
                    } else {
                        printf("%s:%s batch %d %s stage-1 objective %.6f staged %.9g best %.9g "
                               "(%+.4f%%)\n", name, load, k, mx[k % nmx], T, ms, bk,
                               bk > 0 ? 100 * (ms / bk - 1) : 0.0);
                        if (ms < INFINITY) {
                            staged++;
                            if (bk > 0) {
                                gsum += ms / bk - 1;
                                if (ms / bk - 1 < gmin) gmin = ms / bk - 1;
                            }
                            if (bk == 0 || ms < bk) {
                                better++;
                                if (best_update && it)
                                    cJSON_ReplaceItemInArray(brow, k, cJSON_CreateNumber(ms));
                            }
                        }
                    }
                }
                zel_sol_free(&sol);
                cJSON_Delete(j);
            }
            zel_model_free(&m);
            zg_problem_free(&pr);
            zg_batch_free(&b);
        }
        if (export_dir && !rc)
            printf("%s:%s: wrote %d %s models to %s\n", name, load, batches,
                   relax ? "relaxation" : "stage-1", export_dir);
        if (search_s > 0)
            printf("%s:%s: %d bounds searched (%d invalid), %d above the recorded; %d staged "
                   "layouts better than the best known plan\n", name, load, staged, bad, better,
                   plans);
        else if (stage_dir && relax)
            printf("%s:%s: %d bounds read (%d missing, %d invalid), %d above the recorded; best "
                   "plan vs bound mean %+.4f%%\n", name, load, staged, missing, bad, better,
                   staged ? 100 * gsum / staged : 0.0);
        else if (stage_dir)
            printf("%s:%s: %d layouts staged (%d missing), %d below the best known; staged vs "
                   "best mean %+.4f%%, min %+.4f%%\n", name, load, staged, missing, better,
                   staged ? 100 * gsum / staged : 0.0, gmin < INFINITY ? 100 * gmin : 0.0);
        if (bad) rc = 1;  // an invalid bound: stop after this setting's report
        zb_env_free(&e);
    }
    if (!rc && lbf && lb_update) rc = write_back(lb_path, lbf, "--lb-update");
    cJSON_Delete(lbf);
    if (!rc && best && best_update) rc = write_back(best_path, best, "--best-update");
    cJSON_Delete(best);
    free(pick);
    return rc;
}
