/*
 * QTest for the AMD Lightweight Profiling CPUID words
 *
 * Every case runs with "-accel tcg" first, so that the values checked are
 * the ones left after TCG's feature filtering (the qtest accelerator
 * filters nothing).  Expected values are the real Family 15h ones
 * (FX-8150, Opteron 6200) and the field layout of AMD publication 43724,
 * Table 3-1.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qobject/qdict.h"
#include "qobject/qlist.h"
#include "qobject/qnum.h"
#include "qobject/qbool.h"
#include "libqtest.h"

#define LWP_LEAF 0x8000001C

typedef struct LwpWords {
    uint32_t ext3_ecx;      /* CPUID 8000_0001 ECX */
    uint32_t xcr0_hi;       /* CPUID 0xD.0 EDX */
    uint32_t ebx, ecx, edx; /* CPUID 8000_001C */
    uint32_t filtered_ext3_ecx, filtered_ecx, filtered_edx;
    uint32_t xlevel;
} LwpWords;

static QObject *qom_get(QTestState *qts, const char *path, const char *prop)
{
    QDict *resp = qtest_qmp(qts, "{ 'execute': 'qom-get',"
                                 "  'arguments': { 'path': %s,"
                                 "                 'property': %s } }",
                            path, prop);
    QObject *ret = qdict_get(resp, "return");

    g_assert(ret);
    qobject_ref(ret);
    qobject_unref(resp);
    return ret;
}

static uint32_t feature_word(QList *words, uint32_t eax, uint32_t ecx,
                             const char *reg)
{
    const QListEntry *e;

    for (e = qlist_first(words); e; e = qlist_next(e)) {
        QDict *w = qobject_to(QDict, qlist_entry_obj(e));
        bool has_ecx = qdict_haskey(w, "cpuid-input-ecx");

        if (qdict_get_int(w, "cpuid-input-eax") == eax &&
            (!has_ecx || qdict_get_int(w, "cpuid-input-ecx") == ecx) &&
            !strcmp(qdict_get_str(w, "cpuid-register"), reg)) {
            return qdict_get_int(w, "features");
        }
    }
    g_assert_not_reached();
}

static QTestState *start(const char *cpu, char **path)
{
    QTestState *qts = qtest_initf("-accel tcg -S -cpu %s", cpu);
    QDict *resp = qtest_qmp(qts, "{'execute': 'query-cpus-fast'}");
    QList *cpus = qdict_get_qlist(resp, "return");
    QDict *cpu0 = qobject_to(QDict, qlist_peek(cpus));

    *path = g_strdup(qdict_get_str(cpu0, "qom-path"));
    qobject_unref(resp);
    return qts;
}

static LwpWords get_words(const char *cpu)
{
    LwpWords r;
    char *path;
    QTestState *qts = start(cpu, &path);
    QList *present = qobject_to(QList, qom_get(qts, path, "feature-words"));
    QList *filtered = qobject_to(QList, qom_get(qts, path,
                                                "filtered-features"));
    QNum *xlevel = qobject_to(QNum, qom_get(qts, path, "xlevel"));

    r.ext3_ecx = feature_word(present, 0x80000001, 0, "ECX");
    r.xcr0_hi = feature_word(present, 0xD, 0, "EDX");
    r.ebx = feature_word(present, LWP_LEAF, 0, "EBX");
    r.ecx = feature_word(present, LWP_LEAF, 0, "ECX");
    r.edx = feature_word(present, LWP_LEAF, 0, "EDX");
    r.filtered_ext3_ecx = feature_word(filtered, 0x80000001, 0, "ECX");
    r.filtered_ecx = feature_word(filtered, LWP_LEAF, 0, "ECX");
    r.filtered_edx = feature_word(filtered, LWP_LEAF, 0, "EDX");
    r.xlevel = qnum_get_uint(xlevel);

    qobject_unref(present);
    qobject_unref(filtered);
    qobject_unref(xlevel);
    g_free(path);
    qtest_quit(qts);
    return r;
}

static void assert_no_lwp(const LwpWords *w)
{
    g_assert_cmphex(w->ext3_ecx & (1u << 15), ==, 0);
    g_assert_cmphex(w->xcr0_hi & (1u << 30), ==, 0);
    g_assert_cmphex(w->ebx, ==, 0);
    g_assert_cmphex(w->ecx, ==, 0);
    g_assert_cmphex(w->edx, ==, 0);
}

/* Family 15h: EBX 80032013, ECX 00010200, EDX 8000000F (prior-art) */
static void test_family15h(const void *data)
{
    g_autofree char *cpu = g_strdup_printf("%s,+lwp", (const char *)data);
    LwpWords w = get_words(cpu);

    g_assert_cmphex(w.ext3_ecx & (1u << 15), ==, 1u << 15);
    g_assert_cmphex(w.xcr0_hi & (1u << 30), ==, 1u << 30);
    g_assert_cmphex(w.ebx, ==, 0x80032013);
    g_assert_cmphex(w.ecx, ==, 0x00010200);
    g_assert_cmphex(w.edx, ==, 0x8000000F);
    /* (TCG filters the models' XOP, FMA4 and MisAlignSse) */
    g_assert_cmphex(w.filtered_ext3_ecx & (1u << 15), ==, 0);
    g_assert_cmphex(w.filtered_ecx, ==, 0);
    g_assert_cmphex(w.filtered_edx, ==, 0);
    g_assert_cmphex(w.xlevel, >=, LWP_LEAF);
}

static void test_family15h_without_lwp(const void *data)
{
    LwpWords w = get_words(data);

    assert_no_lwp(&w);
    g_assert_cmphex(w.filtered_edx, ==, 0);
}

/* LWP is opt-in: -cpu max does not enable it */
static void test_max_without_lwp(void)
{
    LwpWords w = get_words("max");

    assert_no_lwp(&w);
}

/*
 * -cpu max,+lwp reports what the implementation supports: LwpAvail,
 * LwpVAL, LwpIRE, LwpBRE, LwpDME, LwpCNH, LwpRNH (events 1-6) and LwpInt,
 * so EBX describes an LWPCB with six event slots (LwpCbSize 0x10 + 6,
 * LwpEventSize 0x20, LwpMaxEvents 6, LwpEventOffset 0x80), and ECX is
 * LwpCacheLatency and LwpCacheLevels (bits 31, 30), LwpIpFiltering (29),
 * LwpVersion 1, LwpMinBufferSize 1, LwpLatencyRnd 0, LwpDataAddress (5)
 * and LwpLatencyMax 16.
 */
static void test_max_with_lwp(void)
{
    LwpWords w = get_words("max,+lwp");

    g_assert_cmphex(w.ext3_ecx & (1u << 15), ==, 1u << 15);
    g_assert_cmphex(w.xcr0_hi & (1u << 30), ==, 1u << 30);
    g_assert_cmphex(w.edx, ==, 0x8000007F);
    g_assert_cmphex(w.ebx, ==, 0x80062016);
    g_assert_cmphex(w.ecx, ==, 0xE0010230);
    g_assert_cmphex(w.xlevel, >=, LWP_LEAF);
}

/*
 * TCG filters the sub-feature it does not implement (branch prediction),
 * and says so; DCache misses with the latency filter, IP filtering and
 * the clock events are implemented, so a Family 15h model can be given
 * them, and DME brings LwpLatencyMax 16 (the lwp-latency-max default)
 */
static void test_unimplemented_are_filtered(void)
{
    LwpWords w = get_words("Opteron_G4,+lwp,+lwp-dme,+lwp-cache-latency,"
                           "+lwp-cnh,+lwp-rnh,+lwp-ipf,+lwp-bpred");

    g_assert_cmphex(w.edx, ==, 0x8000007F);
    g_assert_cmphex(w.filtered_edx, ==, 0);
    g_assert_cmphex(w.filtered_ecx, ==, 1u << 28);
    g_assert_cmphex(w.ecx, ==, 0xA0010210);
    /* LwpMaxEvents 6, LwpCbSize 0x10 + 6 */
    g_assert_cmphex(w.ebx, ==, 0x80062016);
}

/* Removing an event shrinks the geometry the leaf reports */
static void test_minus_subfeature(void)
{
    LwpWords w = get_words("Opteron_G5,+lwp,-lwp-bre,-lwp-int");

    g_assert_cmphex(w.edx, ==, 0x00000007);
    /* LwpMaxEvents 2, LwpCbSize 0x10 + 2 */
    g_assert_cmphex(w.ebx, ==, 0x80022012);
}

/* LWP needs XSAVE (spec 3.1), and the sub-features need LWP */
static void test_dependencies(void)
{
    LwpWords w = get_words("Opteron_G4,+lwp,-xsave");

    assert_no_lwp(&w);
    g_assert_cmphex(w.filtered_ext3_ecx & (1u << 15), ==, 1u << 15);

    w = get_words("max,+lwp-val");
    assert_no_lwp(&w);
    g_assert_cmphex(w.filtered_edx, ==, 1u << 1);
}

/* The sub-features are boolean QOM properties */
static void test_properties(void)
{
    char *path;
    QTestState *qts = start("Opteron_G4,+lwp,-lwp-ire", &path);
    static const struct {
        const char *name;
        bool value;
    } props[] = {
        { "lwp", true }, { "lwp-val", true }, { "lwp-ire", false },
        { "lwp-bre", true }, { "lwp-dme", false }, { "lwp-cnh", false },
        { "lwp-rnh", false }, { "lwp-int", true }, { "lwp-daddr", false },
        { "lwp-bpred", false }, { "lwp-ipf", false },
        { "lwp-cache-level", false }, { "lwp-cache-latency", false },
    };

    for (int i = 0; i < ARRAY_SIZE(props); i++) {
        QBool *b = qobject_to(QBool, qom_get(qts, path, props[i].name));

        g_assert_cmpint(qbool_get_bool(b), ==, props[i].value);
        qobject_unref(b);
    }
    g_free(path);
    qtest_quit(qts);
}

int main(int argc, char **argv)
{
    g_test_init(&argc, &argv, NULL);

    if (!qtest_has_accel("tcg")) {
        g_test_skip("LWP is implemented by TCG only");
        return g_test_run();
    }
    qtest_add_data_func("/x86/lwp/cpuid/Opteron_G4", "Opteron_G4",
                        test_family15h);
    qtest_add_data_func("/x86/lwp/cpuid/Opteron_G5", "Opteron_G5",
                        test_family15h);
    qtest_add_data_func("/x86/lwp/cpuid/Opteron_G4-without-lwp",
                        "Opteron_G4", test_family15h_without_lwp);
    qtest_add_func("/x86/lwp/cpuid/max-without-lwp", test_max_without_lwp);
    qtest_add_func("/x86/lwp/cpuid/max-with-lwp", test_max_with_lwp);
    qtest_add_func("/x86/lwp/cpuid/filtered", test_unimplemented_are_filtered);
    qtest_add_func("/x86/lwp/cpuid/minus-subfeature", test_minus_subfeature);
    qtest_add_func("/x86/lwp/cpuid/dependencies", test_dependencies);
    qtest_add_func("/x86/lwp/cpuid/properties", test_properties);
    return g_test_run();
}
