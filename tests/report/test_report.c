// test_report.c — string buffer, text tables, HTML escaping, bars and Gantt SVG content.
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "report/report.h"
#include "zgtest.h"

ZG_TEST(sbuf_grows_and_escapes) {
    zg_sbuf s;
    zg_sbuf_init(&s);
    for (int i = 0; i < 2000; i++) zg_sbuf_printf(&s, "%d,", i);
    CHECK(s.len > 8000 && !s.oom);
    CHECK(strncmp(s.data, "0,1,2,", 6) == 0);
    zg_sbuf_free(&s);
    zg_sbuf_init(&s);
    zg_sbuf_escape_html(&s, "<a href=\"x\">&</a>");
    CHECK_STR(s.data, "&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;");
    zg_sbuf_free(&s);
}

ZG_TEST(table_prints_aligned) {
    zg_error e;
    zg_table t;
    const char *h[] = {"policy", "makespan"};
    CHECK_OK(zg_table_init(&t, 2, h, &e), &e);
    const char *r1[] = {"zellige", "1.5"};
    const char *r2[] = {"dp", "123.25"};
    CHECK_OK(zg_table_add_row(&t, r1, &e), &e);
    CHECK_OK(zg_table_add_row(&t, r2, &e), &e);
    char buf[512] = {0};
    FILE *f = fmemopen(buf, sizeof buf, "w");
    zg_table_print(&t, f);
    fclose(f);
    CHECK(strstr(buf, "policy   makespan\n") != NULL);
    CHECK(strstr(buf, "zellige       1.5\n") != NULL);
    CHECK(strstr(buf, "dp         123.25\n") != NULL);
    zg_table_free(&t);
}

ZG_TEST(html_page_with_bars_is_written_atomically) {
    zg_error e;
    zg_html h;
    zg_html_init(&h);
    zg_html_heading(&h, 1, "A & B");
    const char *groups[] = {"V35", "V40"}, *series[] = {"zellige", "dp"};
    double vals[] = {1.0, 2.0, 1.5, NAN};
    zg_html_bars(&h, "bars", "s", 2, groups, 2, series, vals);
    CHECK(strstr(h.body.data, "A &amp; B") != NULL);
    CHECK(strstr(h.body.data, "n/a") != NULL);  // the NaN bar
    CHECK(strstr(h.body.data, "<title>dp: 2</title>") != NULL);
    char path[] = "/tmp/zg_report_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    CHECK_OK(zg_html_write(&h, "t", path, &e), &e);
    char *data = NULL;
    CHECK_OK(zg_file_read(path, &data, NULL, &e), &e);
    CHECK(strncmp(data, "<!DOCTYPE html>", 15) == 0);
    CHECK(strstr(data, "</html>") != NULL);
    free(data);
    unlink(path);
    CHECK(zg_html_write(&h, "t", "/nonexistent/dir/r.html", &e) == ZG_ERR_IO);
    zg_html_free(&h);
}

static int64_t count(const char *hay, const char *needle) {
    int64_t n = 0;
    for (const char *q = hay; (q = strstr(q, needle)); q++)
        n++;
    return n;
}

// Two rounds on 2 ranks: round 0 = seq 0 on both ranks (2 s, of which 0.5 s exposed
// communication) and seq 1 whole on rank 0 (1 s); round 1 = seq 2 whole on rank 1 (3 s). Round
// 1 starts when round 0's slowest rank ends (3 s), so the makespan is 6 s. On a shared axis of
// 12 s (900 px: 75 px/s, from x = 44): seq 0's shard is compute [0, 1.5) then communication
// [1.5, 2), rank 1 idles [2, 3), the round separator is at 44 + 75*3 = 269, rank 0 idles [3, 6).
ZG_TEST(gantt_draws_rounds_comm_idle_on_a_shared_axis) {
    zg_error e;
    zg_plan p;
    zg_plan_init(&p);
    CHECK_OK(zg_plan_alloc(&p, 3, 2, &e), &e);
    zg_seq s[3] = {{.id = 0, .tokens = 10}, {.id = 1, .tokens = 4}, {.id = 2, .tokens = 6}};
    int32_t both[2] = {0, 1}, r0[1] = {0}, r1[1] = {1};
    int64_t halves[2] = {5, 5}, all1[1] = {4}, all2[1] = {6};
    zg_config ring2 = {1, 1, 2}, whole = {1, 1, 1};
    CHECK_OK(zg_plan_set_ranks(&p, 0, &s[0], 0, ring2, both, halves, 2, &e), &e);
    CHECK_OK(zg_plan_set_ranks(&p, 1, &s[1], 1, whole, r0, all1, 1, &e), &e);
    CHECK_OK(zg_plan_set_ranks(&p, 2, &s[2], 2, whole, r1, all2, 1, &e), &e);
    p.p[0].time = 2, p.p[1].time = 1, p.p[2].time = 3, p.p[2].round = 1;
    double comm[3] = {0.5, 0, 0};
    zg_gantt_opts go = {.axis_s = 12, .comm_s = comm, .note = "peak 1 B < cap", .css_class = "x"};
    zg_html h;
    zg_html_init(&h);
    zg_html_gantt(&h, "two rounds", &p, &go);
    const char *d = h.body.data;
    CHECK(strstr(d, "<figure class='gantt-fig x'>") != NULL);
    // busy 2+2+1+3 = 8 of 2 ranks x 6 s: compute 7, communication 1, idle 4
    CHECK(strstr(d, "makespan 6 s, 2 rounds run one after another; rank time: 58.3% compute, "
                    "8.3% communication, 33.3% idle; peak 1 B &lt; cap</figcaption>") != NULL);
    CHECK(strstr(d, "class='gantt' data-axis-s='12' data-makespan-s='6'") != NULL);
    CHECK(strstr(d, "<line x1='269.00' y1='6' x2='269.00'") != NULL); // round separator
    CHECK(strstr(d, ">round 1</text>") != NULL);
    // seq 0's shard on rank 0 (outlined), its communication, rank 1's idle, seq 2 in round 1
    CHECK(strstr(d, "<rect x='44.00' y='19.0' width='112.50' height='16.0' fill='#2171b5' "
                    "stroke='#08306b'") != NULL);
    CHECK(strstr(d, "<rect x='156.50' y='19.0' width='37.50' height='16.0' fill='#f28e2b'>") !=
          NULL);
    CHECK(strstr(d, "<rect x='194.00' y='37.0' width='75.00' height='16.0' fill='#e4e4e4'>") !=
          NULL);
    CHECK(strstr(d, "<rect x='269.00' y='37.0' width='225.00' height='16.0' fill='#9ecae1'>") !=
          NULL);
    CHECK(strstr(d, "<rect x='269.00' y='19.0' width='225.00' height='16.0' fill='#e4e4e4'>") !=
          NULL);
    CHECK(strstr(d, "seq 0 (10 tokens) θ=(1,1,2), shard 2/2 [5,10), 1.5 s compute") != NULL);
    CHECK(strstr(d, "seq 0 θ=(1,1,2), 0.5 s exposed communication") != NULL);
    // the makespan line at 44 + 75*6; ticks every 2 s up to the shared axis' 12 s
    CHECK(strstr(d, "class='makespan' x1='494.00'") != NULL);
    CHECK_EQ_INT(count(d, "class='tick'"), 7);
    CHECK(strstr(d, ">12 s</text>") != NULL);
    CHECK_EQ_INT(count(d, "<rect"),
                 8); // shard, comm, seq 1, idle on rank 0; shard, comm, idle, seq 2
    zg_html_free(&h);
    // one round, own axis: no separator, the axis is the slowest rank (rank 1: 2 + 3 s)
    p.p[2].round = 0;
    zg_html_init(&h);
    zg_html_gantt(&h, "one round", &p, NULL);
    CHECK(strstr(h.body.data, "makespan 5 s; rank time: 80.0% compute, 0.0% communication, 20.0% "
                              "idle</figcaption>") != NULL);
    CHECK(strstr(h.body.data, "data-axis-s='5'") != NULL);
    CHECK(strstr(h.body.data, ">round ") == NULL);
    zg_html_free(&h);
    zg_plan_free(&p);
}

// 2 ranks: 400 split sequences of 0.01 s (0.004 s exposed communication) on both ranks, then on
// each rank 600 whole sequences of 0.002 s and one of 10 s. At 900 px for 15.2 s every span but
// the 10 s one is a fraction of a pixel: each rank's 1400 narrow spans become one mixed box
// (compute, then communication: 2 rects), then the 10 s sequence: 6 rects in all, not 4002.
ZG_TEST(gantt_merges_narrow_and_same_kind_spans) {
    zg_error e;
    zg_plan p;
    zg_plan_init(&p);
    const int64_t n_split = 400, n_whole = 601;
    CHECK_OK(zg_plan_alloc(&p, n_split + 2 * n_whole, 2, &e), &e);
    double *comm = calloc((size_t)p.n, sizeof *comm);
    int32_t both[2] = {0, 1};
    int64_t halves[2] = {4, 4}, all[1] = {8};
    zg_config ulysses = {1, 2, 1}, whole = {1, 1, 1};
    for (int64_t i = 0; i < p.n; i++) {
        zg_seq sq = {.id = i, .tokens = 8};
        if (i < n_split) {
            CHECK_OK(zg_plan_set_ranks(&p, i, &sq, i, ulysses, both, halves, 2, &e), &e);
            p.p[i].time = 0.01, comm[i] = 0.004;
        } else {
            int32_t r[1] = {(int32_t)((i - n_split) / n_whole)};
            CHECK_OK(zg_plan_set_ranks(&p, i, &sq, i, whole, r, all, 1, &e), &e);
            p.p[i].time = (i - n_split) % n_whole == n_whole - 1 ? 10 : 0.002;
        }
    }
    zg_gantt_opts go = {.comm_s = comm};
    zg_html h;
    zg_html_init(&h);
    zg_html_gantt(&h, "many", &p, &go);
    const char *d = h.body.data;
    CHECK_EQ_INT(count(d, "<rect"), 6);
    CHECK_EQ_INT(count(d, "fill='#b4a7d6'"), 2); // the mixed boxes
    CHECK(strstr(d, "r0 0–5.2 s: 1400 spans too narrow to draw one by one (6400 tokens): 3.6 s "
                    "compute, then 1.6 s exposed communication (totals)") != NULL);
    CHECK(strstr(d, "r1 5.2–15.2 s: seq 1601 (8 tokens) whole, 10 s compute") != NULL);
    zg_html_free(&h);
    // wide shards of different sequences stay apart (and labelled) even with no communication
    for (int64_t i = 0; i < n_split; i++)
        p.p[i].time = i < 2 ? 5 : 0;
    zg_html_init(&h);
    zg_html_gantt(&h, "wide", &p, NULL);
    CHECK(strstr(h.body.data, ">s0 θ=(1,2,1)</text>") &&
          strstr(h.body.data, ">s1 θ=(1,2,1)</text>"));
    CHECK_EQ_INT(count(h.body.data, "stroke='#08306b'"), 4); // 2 shards x 2 ranks, outlined
    // after them, a rank's 601 whole sequences (narrow or not) are one box of their kind
    CHECK(strstr(h.body.data, "r0 10–21.2 s: 601 whole sequences (4808 tokens), 11.2 s compute"));
    CHECK_EQ_INT(count(h.body.data, "<rect"), 6);
    zg_html_free(&h);
    zg_html_init(&h);
    zg_html_gantt_legend(&h);
    CHECK(strstr(h.body.data, "id='gantt-legend'") && strstr(h.body.data, "θ = (q,h,k)"));
    CHECK(strstr(h.body.data, "communication (exposed)") && strstr(h.body.data, ">idle</li>"));
    zg_html_free(&h);
    free(comm);
    zg_plan_free(&p);
}

ZG_TEST_MAIN()
