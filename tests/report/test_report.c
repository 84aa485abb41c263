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

ZG_TEST_MAIN()
