# Thin wrapper around meson: `make` builds into build/, `make check` runs
# every test, `make demo` runs the demonstration, `make install` installs
# (PREFIX, default /usr/local, and DESTDIR honoured; the nbdkit plugin goes
# to nbdkit's own plugin directory so that `nbdkit blkemu` finds it).
BUILD ?= build
MESON_OPTS ?=
PREFIX ?= /usr/local
VERSION = $(shell dpkg-parsechangelog -S Version 2>/dev/null)
ARCH = $(shell dpkg --print-architecture 2>/dev/null)

.PHONY: all check check-long check-untimed demo bench format clean deps asan check-asan fuzz tsan check-tsan \
	install uninstall install-check deb deb-install

all: $(BUILD)/build.ninja
	ninja -C $(BUILD)

$(BUILD)/build.ninja:
	meson setup $(BUILD) --prefix=$(PREFIX) $(MESON_OPTS)

# The measure suite, the VM scenarios, the host tests (tools/run-check).
# CHECK_BESIDE_VM: make arguments run beside the VM scenarios, SCHED_IDLE
# (CI: "check-untimed check-asan fuzz FUZZ_JOBS=1"); the host
# tests then leave out what it ran of theirs (the untimed suite).
CHECK_BESIDE_VM ?=
check: deps
	$(MAKE) all
	./tools/run-check $(BUILD) $(CHECK_BESIDE_VM)

# The long figures: every VM scenario at full scale (seed 000's three
# runs of three profiles, its %diffs asserted) on both kernels, and a
# ten-minute torture run.
check-long: deps
	$(MAKE) all
	BLKEMU_VM_SCALE=full BLKEMU_VM_ALL_KERNELS=1 TORTURE_SECONDS=600 \
	  meson test -C $(BUILD) --print-errorlogs --num-processes 1 --timeout-multiplier 4 vm-scenarios torture; \
	  status=$$?; ./tools/test-summary $(BUILD) check-long: && exit $$status

# The host tests that hold no timing (tests/meson.build: untimed_tests,
# and the torture run) alone.
check-untimed: all
	meson test -C $(BUILD) --no-rebuild --print-errorlogs --num-processes 1 \
	  --suite untimed --logbase untimed; \
	  status=$$?; ./tools/test-summary $(BUILD) "untimed host tests:" untimed && exit $$status

demo:
	./tools/blkemu-demo

bench: all
	./bench/run-all

deps:
	./tools/install-deps
	./tools/install-deps vm

# An AddressSanitizer + UBSan build in build-asan/ and the suite run on it.
asan:
	$(MAKE) BUILD=build-asan MESON_OPTS="-Db_sanitize=address,undefined -Db_lundef=false" all

check-asan: deps asan
	./tools/run-asan-tests build-asan

# A ThreadSanitizer build in build-tsan/ and the unit and host-side
# concurrent tests (nbd, FUSE) run on it.
tsan:
	$(MAKE) BUILD=build-tsan MESON_OPTS="-Db_sanitize=thread -Db_lundef=false" all

check-tsan: deps tsan
	./tools/run-tsan-tests build-tsan

# libFuzzer harnesses (fuzz/): each runs FUZZ_SECONDS from the seed corpus,
# in FUZZ_JOBS processes side by side (CI: 2, one a core).
FUZZ_SECONDS ?= 60
FUZZ_JOBS ?= 1
fuzz: deps
	./fuzz/run -t $(FUZZ_SECONDS) -j $(FUZZ_JOBS)

install: all
	meson configure $(BUILD) --prefix=$(PREFIX)
	meson install -C $(BUILD)

uninstall:
	ninja -C $(BUILD) uninstall

# The installed commands, run from outside the source tree.
install-check:
	./tools/install-check

# Debian packages (nbdkit-plugin-blkemu, blkemu) in the parent directory,
# checked by lintian; deb-install installs them with their dependencies.
deb: deps
	dpkg-buildpackage -b -us -uc
	lintian --fail-on error ../blkemu_$(VERSION)_$(ARCH).changes

deb-install:
	apt-get install -y --reinstall ../nbdkit-plugin-blkemu_$(VERSION)_$(ARCH).deb \
	  ../blkemu_$(VERSION)_$(ARCH).deb

# The frontends are every folder with a descriptor.c (as tests/test-format.sh).
format:
	clang-format -i $$(find backends bench common core fuzz include tests tools \
	  $$(ls -d */descriptor.c | xargs -n1 dirname) -name '*.[ch]')

clean:
	rm -rf build build-asan build-tsan build-fuzz
