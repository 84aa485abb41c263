# zellige — one command builds everything: `make` (library per module, CLIs, tests).
# `make test` runs the whole suite; `make asan` builds and tests with sanitizers.
#
# Layout: src/<module>/*.c and src/<module>/<part>/*.c -> build/lib/libzg_<module>.a; each
# module lists the modules it uses (transitively, link order) in src/<module>/deps, and
# scripts/check-layering.py keeps includes to those. tests/<module>/test_*.c link against their
# module and its deps (or the list in tests/<module>/deps when the tests need modules above it),
# so a broken module does not block another module's tests.
# Optional parts are detected and printed: MPI, CBC, CUDA/NCCL, OpenMP.

BUILD    ?= build
CC       ?= cc
OPT      ?= -O2 -g
SAN      ?=
CSTD     := -std=c11 -D_GNU_SOURCE
WARN     := -Wall -Wextra -Wno-unused-parameter -Wshadow -Wstrict-prototypes
CFLAGS   := $(CSTD) $(OPT) $(WARN) $(SAN) -Isrc
DEPFLAGS := -MMD -MP
LDLIBS   := -lm

# --- required: cJSON, OpenBLAS -------------------------------------------------------------
CJSON_CFLAGS := $(shell pkg-config --cflags libcjson 2>/dev/null)
CJSON_LIBS   := $(shell pkg-config --libs libcjson 2>/dev/null || echo -lcjson)
BLAS_CFLAGS  := $(shell pkg-config --cflags openblas 2>/dev/null)
BLAS_LIBS    := $(shell pkg-config --libs openblas 2>/dev/null || echo -lopenblas)
CFLAGS += $(CJSON_CFLAGS) $(BLAS_CFLAGS)
LDLIBS += $(CJSON_LIBS) $(BLAS_LIBS)

# --- OpenMP ----------------------------------------------------------------------------------
HAVE_OPENMP := $(shell echo 'int main(void){return 0;}' | $(CC) -fopenmp -x c - -o /dev/null 2>/dev/null && echo 1)
ifeq ($(HAVE_OPENMP),1)
CFLAGS += -fopenmp -DZG_HAVE_OPENMP=1
LDLIBS += -fopenmp
endif

# --- MPI (optional; NO_MPI=1 to skip) ---------------------------------------------------------
ifneq ($(NO_MPI),1)
MPI_CFLAGS := $(shell mpicc --showme:compile 2>/dev/null)
MPI_LIBS   := $(shell mpicc --showme:link 2>/dev/null)
endif
ifneq ($(strip $(MPI_LIBS)),)
HAVE_MPI := 1
CFLAGS += $(MPI_CFLAGS) -DZG_HAVE_MPI=1
LDLIBS += $(MPI_LIBS)
endif

# --- COIN-OR CBC (optional; NO_CBC=1 to skip) -------------------------------------------------
ifneq ($(NO_CBC),1)
CBC_LIBS := $(shell pkg-config --libs cbc 2>/dev/null)
endif
ifneq ($(strip $(CBC_LIBS)),)
HAVE_CBC := 1
CFLAGS += $(shell pkg-config --cflags cbc) -DZG_HAVE_CBC=1
LDLIBS += $(CBC_LIBS)
endif

# --- CUDA (optional; NO_CUDA=1 to skip; runs where a GPU is, compiles anywhere nvcc is) -------
# Built only when there are CUDA sources (src/**/*.cu) and nvcc is found.
NVCC ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
CUDA_SRCS := $(wildcard src/*/*.cu src/*/*/*.cu)
ifneq ($(NO_CUDA),1)
ifneq ($(strip $(NVCC)),)
ifneq ($(strip $(CUDA_SRCS)),)
HAVE_CUDA := 1
endif
endif
endif
ifeq ($(HAVE_CUDA),1)
# CUDA sources (src/<m>/**/*.cu) go into their module's library; every link gets the runtime.
# NVCC_GENCODE: sm_90 (H100/H200) code + compute_90 PTX for newer GPUs (override to add archs).
# CUDA_HOME: where nvcc says it runs from (_HERE_ of its dry run), so that a wrapper script
# (/usr/local/bin/nvcc exec'ing the toolkit's) still names the toolkit; else nvcc's own folder.
NVCC_HERE    := $(realpath $(shell $(NVCC) --dryrun -x cu /dev/null 2>&1 | sed -n 's/^.. _HERE_=//p' | head -n1))
CUDA_HOME    ?= $(patsubst %/bin,%,$(or $(NVCC_HERE),$(patsubst %/,%,$(dir $(realpath $(NVCC))))))
NVCC_GENCODE ?= -gencode arch=compute_90,code=[sm_90,compute_90]
NVCCFLAGS    := -std=c++17 -O3 -g -lineinfo $(NVCC_GENCODE) -Isrc -Xcompiler -Wall
CUDA_OBJS    := $(patsubst src/%.cu,$(BUILD)/obj/%.o,$(CUDA_SRCS))
# CUDA_LIBDIR: where libcudart and libcublas are (rpath'd, so binaries find them at run time).
CUDA_LIBDIR  ?= $(CUDA_HOME)/lib64
CFLAGS += -DZG_HAVE_CUDA=1 -isystem $(CUDA_HOME)/include
LDLIBS += -L$(CUDA_LIBDIR) -Wl,-rpath,$(CUDA_LIBDIR) -lcudart -lcublas -lstdc++
# NCCL (optional; NO_NCCL=1 to skip): header and library found by a test link, in NCCL_HOME
# (include/, lib/ or lib64/; default CUDA_HOME) or the compiler's default paths (apt's libnccl-dev).
ifneq ($(NO_NCCL),1)
NCCL_HOME ?= $(CUDA_HOME)
NCCL_DIRS := -I$(NCCL_HOME)/include -L$(NCCL_HOME)/lib -L$(NCCL_HOME)/lib64
HAVE_NCCL := $(shell printf '\043include <nccl.h>\nint main(void){int v;return ncclGetVersion(&v);}' \
  | $(CC) -x c - $(NCCL_DIRS) -lnccl -o /dev/null 2>/dev/null && echo 1)
endif
ifeq ($(HAVE_NCCL),1)
CFLAGS += -DZG_HAVE_NCCL=1 -isystem $(NCCL_HOME)/include
LDLIBS += -L$(NCCL_HOME)/lib -L$(NCCL_HOME)/lib64 -Wl,-rpath,$(NCCL_HOME)/lib \
          -Wl,-rpath,$(NCCL_HOME)/lib64 -lnccl
endif
endif
CUDA_STATUS := $(if $(HAVE_CUDA),yes ($(NVCC); NCCL $(if $(HAVE_NCCL),yes,no)),$(if $(CUDA_SRCS),$(if $(filter 1,$(NO_CUDA)),no (NO_CUDA=1),no (nvcc not found)),no (no CUDA sources)))

# a module is a folder of src/ with C sources in it or in its part folders
MODULES := $(sort $(foreach d,$(wildcard src/*/),$(if $(wildcard $(d)*.c $(d)*/*.c),$(notdir $(patsubst %/,%,$(d))))))
LIBDIR  := $(BUILD)/lib
OBJDIR  := $(BUILD)/obj
BINDIR  := $(BUILD)/bin
TESTDIR := $(BUILD)/tests

# deps of module m (transitive, in link order), from src/m/deps
deps_of = $(shell cat src/$(1)/deps 2>/dev/null)
libs_of = $(foreach m,$(1) $(call deps_of,$(1)),$(LIBDIR)/libzg_$(m).a)
# the modules a test folder links: tests/<m>/deps when present, else m and its deps
test_mods = $(if $(wildcard tests/$(1)/deps),$(shell cat tests/$(1)/deps),$(1) $(call deps_of,$(1)))
test_libs = $(foreach m,$(call test_mods,$(1)),$(LIBDIR)/libzg_$(m).a)
ALL_LIBS := $(foreach m,$(MODULES),$(LIBDIR)/libzg_$(m).a)

# link order for CLIs: most dependent first
LINK_ORDER := aoizora profile train engine dit comm kernels sim report planner zellige plan cost \
              topo workload model core
CLI_LIBS := $(foreach m,$(LINK_ORDER),$(if $(filter $(m),$(MODULES)),$(LIBDIR)/libzg_$(m).a))

TOOLS      := $(notdir $(wildcard tools/*))
TOOL_BINS  := $(foreach t,$(TOOLS),$(BINDIR)/$(t))
# a test is built only when its module and every module it depends on have sources
test_mod   = $(notdir $(patsubst %/,%,$(dir $(1))))
test_ready = $(if $(filter-out $(MODULES),$(call test_mods,$(call test_mod,$(1)))),,$(1))
# tests and benchmarks named *_cuda.c are built only when CUDA is
CUDA_ONLY  := $(if $(HAVE_CUDA),,%_cuda.c)
TEST_SRCS  := $(filter-out $(CUDA_ONLY),$(foreach s,$(wildcard tests/*/test_*.c) $(wildcard tests/*/mpitest_*.c),$(call test_ready,$(s))))
TEST_BINS  := $(foreach s,$(TEST_SRCS),$(TESTDIR)/$(notdir $(patsubst %/,%,$(dir $(s))))_$(notdir $(basename $(s))))
BENCH_SRCS := $(filter-out $(CUDA_ONLY),$(wildcard bench/*.c))
BENCH_BINS := $(foreach s,$(BENCH_SRCS),$(BINDIR)/bench_$(notdir $(basename $(s))))

.PHONY: all test asan clean found format format-check fuzz
all: found $(TOOL_BINS) $(TEST_BINS) $(BENCH_BINS)

found:
	@printf 'zellige build: modules [%s]\n' "$(MODULES)"
	@printf '  OpenMP %s  MPI %s  CBC %s  CUDA %s\n' \
	  "$(if $(HAVE_OPENMP),yes,no)" "$(if $(HAVE_MPI),yes,no)" \
	  "$(if $(HAVE_CBC),yes,no)" "$(CUDA_STATUS)"

# --- per-module static libraries ---------------------------------------------------------------
define MODULE_RULES
$(1)_SRCS := $$(wildcard src/$(1)/*.c src/$(1)/*/*.c)
$(1)_OBJS := $$(patsubst src/%.c,$$(OBJDIR)/%.o,$$($(1)_SRCS)) $$(filter $$(OBJDIR)/$(1)/%,$$(CUDA_OBJS))
$$(LIBDIR)/libzg_$(1).a: $$($(1)_OBJS)
	@mkdir -p $$(dir $$@)
	@rm -f $$@
	ar rcs $$@ $$^
endef
$(foreach m,$(MODULES),$(eval $(call MODULE_RULES,$(m))))

$(OBJDIR)/%.o: src/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(DEPFLAGS) -c $< -o $@

$(OBJDIR)/%.o: src/%.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCCFLAGS) -MMD -MP -c $< -o $@

# --- CLIs: tools/<name>/*.c ----------------------------------------------------------------------
define TOOL_RULES
$$(BINDIR)/$(1): $$(wildcard tools/$(1)/*.c) $$(CLI_LIBS)
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS) -Itools/$(1) $$(wildcard tools/$(1)/*.c) $$(CLI_LIBS) $$(LDLIBS) -o $$@
endef
$(foreach t,$(TOOLS),$(eval $(call TOOL_RULES,$(t))))

# --- tests: tests/<module>/test_*.c -> build/tests/<module>_test_* -----------------------------
define TEST_RULES
$$(TESTDIR)/$(2)_$(3): tests/$(2)/$(3).c tests/zgtest.h $$(call test_libs,$(2))
	@mkdir -p $$(dir $$@)
	$$(CC) $$(CFLAGS) $$(DEPFLAGS) -Itests $$< $$(call test_libs,$(2)) $$(LDLIBS) -o $$@
endef
$(foreach s,$(TEST_SRCS),$(eval $(call TEST_RULES,$(s),$(notdir $(patsubst %/,%,$(dir $(s)))),$(notdir $(basename $(s))))))

# --- benchmarks: bench/<name>.c ------------------------------------------------------------------
$(BINDIR)/bench_%: bench/%.c $(CLI_LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $< $(CLI_LIBS) $(LDLIBS) -o $@

test: all
	@scripts/run-tests.sh $(BUILD)

asan:
	$(MAKE) BUILD=build-asan OPT="-O1 -g -fno-omit-frame-pointer" \
	  SAN="-fsanitize=address,undefined -fno-sanitize-recover=undefined" test

# clang-format (.clang-format) applies to the lines a change touches: `git diff FORMAT_BASE`
# (default HEAD: the uncommitted changes; FORMAT_BASE=main checks a branch). The older code was
# laid out by hand (aligned trailing comments, one-line loops): formatting all of it would rewrite
# ~3,800 lines in 190 files for no change in meaning, so it is left until a line is touched.
FORMAT_BASE ?= HEAD
FORMAT_DIFF := git diff -U0 --no-color $(FORMAT_BASE) -- '*.c' '*.h' '*.cu'
format:
	$(FORMAT_DIFF) | clang-format-diff -p1 -i

format-check:
	@out=$$($(FORMAT_DIFF) | clang-format-diff -p1); if [ -n "$$out" ]; then \
	  printf '%s\n' "$$out"; echo "format-check: the lines above changed since $(FORMAT_BASE) are" \
	  "not clang-format clean; 'make format FORMAT_BASE=$(FORMAT_BASE)' fixes them"; exit 1; fi; \
	  echo "format-check: lines changed since $(FORMAT_BASE) are clang-format clean"

clean:
	rm -rf build build-asan build-*

-include $(shell find $(BUILD)/obj $(TESTDIR) -name '*.d' 2>/dev/null)

# --- fuzzing (clang libFuzzer): fuzz/fuzz_<name>.c -> build-fuzz/fuzz_<name> ---------------------
# Run: make fuzz && build-fuzz/fuzz_batch -max_total_time=60 fuzz/corpus/batch
# Crashes found are kept as regression inputs in tests/<module>/fuzz-crashes/ and replayed by tests.
FUZZ_SRCS := $(wildcard fuzz/fuzz_*.c)
fuzz:
	@mkdir -p build-fuzz
	@for s in $(FUZZ_SRCS); do n=$$(basename $$s .c); \
	  echo "clang $$s -> build-fuzz/$$n"; \
	  clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -Isrc $(CJSON_CFLAGS) \
	    $$s $$(cat fuzz/$$n.srcs 2>/dev/null) -o build-fuzz/$$n $(CJSON_LIBS) -lm || exit 1; done
