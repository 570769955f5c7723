// Package enginetest holds the engine's process-level tests: real `longhorn
// engine replica` and `longhorn engine controller` processes driven by NBD
// clients we did not write (nbdinfo, qemu-io, qemu-img, nbdcopy, fio). It has
// no non-test code.
package enginetest
