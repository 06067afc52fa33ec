package progress

// Linef prints one line of the run's own, stamped as the printer's lines
// are (a resumed run's account of what earlier parts measured).
func (p *Printer) Linef(format string, a ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.line(format, a...)
}
