// test_report.c — string buffer, text tables, HTML escaping, bars and Gantt SVG content.
#include <math.h>
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

// Two rounds on 2 ranks: round 0 = seq 0 on both ranks (2 s) and seq 1 whole on rank 0 (1 s);
// round 1 = seq 2 whole on rank 1 (3 s). Round 1 starts when round 0's slowest rank ends (3 s),
// so the axis is 6 s, with one separator at x = 60 + 900 * 3/6 = 510.
ZG_TEST(gantt_draws_rounds_one_after_another) {
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
    zg_html h;
    zg_html_init(&h);
    zg_html_gantt(&h, "two rounds", &p, NULL);
    const char *d = h.body.data;
    CHECK(strstr(d, "makespan 6 s, 2 rounds run one after another") != NULL);
    CHECK(strstr(d, "<line x1='510.00' y1='16' x2='510.00'") != NULL);
    CHECK(strstr(d, ">round 1</text>") != NULL);
    CHECK(strstr(d, "<rect x='510.00' y='51.0' width='450.00'") != NULL);  // seq 2 on rank 1
    CHECK(strstr(d, "[0,6) 3 s, round 1</title>") != NULL);
    zg_html_free(&h);
    // one round: no separator, the axis is the slowest rank (rank 1: 2 + 3 s)
    p.p[2].round = 0;
    zg_html_init(&h);
    zg_html_gantt(&h, "one round", &p, NULL);
    CHECK(strstr(h.body.data, "makespan 5 s</figcaption>") != NULL);
    CHECK(strstr(h.body.data, ">round ") == NULL && strstr(h.body.data, ", round") == NULL);
    zg_html_free(&h);
    zg_plan_free(&p);
}

ZG_TEST_MAIN()
