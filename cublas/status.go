package cublas

// Err returns s as an error: nil for CUBLAS_STATUS_SUCCESS, else s, boxed
// without allocating (for package cublaslt, whose calls return Status).
// Status's Error and Description are generated (zresult.go).
func (s Status) Err() error {
	if s == CUBLAS_STATUS_SUCCESS {
		return nil
	}
	return s.boxed()
}
