package ui

import "net/http"

func (s *Server) runsPage(w http.ResponseWriter, r *http.Request) {
	s.fail(w, r, http.StatusNotImplemented, "not yet")
}

func (s *Server) runPage(w http.ResponseWriter, r *http.Request) {
	s.fail(w, r, http.StatusNotImplemented, "not yet")
}

func (s *Server) resumeRun(w http.ResponseWriter, r *http.Request) {
	s.fail(w, r, http.StatusNotImplemented, "not yet")
}
