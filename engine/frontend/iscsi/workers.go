package iscsi

import "time"

// workerIdle is how long an idle executor goroutine waits for work before
// it exits.
const workerIdle = 10 * time.Second

// job is one command for an executor goroutine.
type job struct {
	c *conn
	t *task
}

// workerPool runs commands on long-lived goroutines: their stacks are
// already grown and no goroutine is created per command. An idle worker
// takes a job from the unbuffered channel; when none is idle a new one
// starts, so commands never queue behind each other.
type workerPool struct {
	work chan job
	quit chan struct{}
}

func newWorkerPool() *workerPool {
	return &workerPool{work: make(chan job), quit: make(chan struct{})}
}

func (p *workerPool) run(j job) {
	select {
	case p.work <- j:
	default:
		go p.worker(j)
	}
}

func (p *workerPool) worker(j job) {
	idle := time.NewTimer(workerIdle)
	defer idle.Stop()
	for {
		j.c.execute(j.t)
		j = job{}
		idle.Reset(workerIdle)
		select {
		case j = <-p.work:
		case <-idle.C:
			return
		case <-p.quit:
			return
		}
	}
}

// stop lets idle workers exit (running ones finish their command first).
func (p *workerPool) stop() { close(p.quit) }
