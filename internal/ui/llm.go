package ui

import "net/http"

func (s *Server) llmPage(w http.ResponseWriter, r *http.Request) {
	s.fail(w, r, http.StatusNotImplemented, "not yet")
}
