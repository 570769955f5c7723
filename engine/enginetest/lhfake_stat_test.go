package enginetest

import "golang.org/x/sys/unix"

type syscallStat struct{ sec, nsec int64 }

func statCtime(path string, st *syscallStat) error {
	var s unix.Stat_t
	if err := unix.Stat(path, &s); err != nil {
		return err
	}
	st.sec, st.nsec = s.Ctim.Sec, s.Ctim.Nsec
	return nil
}
