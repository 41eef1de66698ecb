; jacobi_f64: one Jacobi sweep for the bench's jacobi rows. Launch it with
; one block of 32 threads (a warp) per row: block i computes row i of
;   dx = (b[i] - sum_j A[i*n+j]*x[j]) / A[i*n+i];  x_new[i] = x[i] + dx
; and adds |dx| to *residual. A is float, the vectors double.
;
; jacobi.ptx is made from this file with LLVM's llc (no CUDA toolkit):
;
;	llc -O3 -march=nvptx64 -mcpu=sm_75 -mattr=+ptx64 -o jacobi.ptx jacobi.ll
;
; The simulator (internal/testenv/sim) runs a native version by its name.
target datalayout = "e-i64:64-i128:128-v16:16-v32:32-n16:32:64"
target triple = "nvptx64-nvidia-cuda"

declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.shfl.sync.bfly.i32(i32, i32, i32, i32)
declare double @llvm.fabs.f64(double)
declare double @llvm.fma.f64(double, double, double)

define void @jacobi_f64(float* %A, double* %b, double* %x, double* %xnew, double* %residual, i64 %n) {
entry:
  %row32 = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %lane32 = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %row = zext i32 %row32 to i64
  %lane = zext i32 %lane32 to i64
  %inrange = icmp ult i64 %row, %n
  br i1 %inrange, label %pre, label %exit

pre:
  %rowoff = mul i64 %row, %n
  br label %cond

cond:
  %j = phi i64 [ %lane, %pre ], [ %jnext, %body ]
  %s = phi double [ 0.0, %pre ], [ %snext, %body ]
  %more = icmp ult i64 %j, %n
  br i1 %more, label %body, label %reduce

body:
  %ai = add i64 %rowoff, %j
  %ap = getelementptr float, float* %A, i64 %ai
  %a = load float, float* %ap, align 4
  %ad = fpext float %a to double
  %xp = getelementptr double, double* %x, i64 %j
  %xv = load double, double* %xp, align 8
  %snext = call double @llvm.fma.f64(double %ad, double %xv, double %s)
  %jnext = add i64 %j, 32
  br label %cond

reduce:
  ; the sum of the warp's 32 partial sums, by butterfly exchanges of
  ; the two halves of each double
  %x1b = bitcast double %s to i64
  %x1lo = trunc i64 %x1b to i32
  %x1h = lshr i64 %x1b, 32
  %x1hi = trunc i64 %x1h to i32
  %x1lo2 = call i32 @llvm.nvvm.shfl.sync.bfly.i32(i32 -1, i32 %x1lo, i32 16, i32 31)
  %x1hi2 = call i32 @llvm.nvvm.shfl.sync.bfly.i32(i32 -1, i32 %x1hi, i32 16, i32 31)
  %x1lw = zext i32 %x1lo2 to i64
  %x1hw = zext i32 %x1hi2 to i64
  %x1hs = shl i64 %x1hw, 32
  %x1o = or i64 %x1hs, %x1lw
  %x1d = bitcast i64 %x1o to double
  %r1 = fadd double %s, %x1d
  %x2b = bitcast double %r1 to i64
  %x2lo = trunc i64 %x2b to i32
  %x2h = lshr i64 %x2b, 32
  %x2hi = trunc i64 %x2h to i32
  %x2lo2 = call i32 @llvm.nvvm.shfl.sync.bfly.i32(i32 -1, i32 %x2lo, i32 8, i32 31)
  %x2hi2 = call i32 @llvm.nvvm.shfl.sync.bfly.i32(i32 -1, i32 %x2hi, i32 8, i32 31)
  %x2lw = zext i32 %x2lo2 to i64
  %x2hw = zext i32 %x2hi2 to i64
  %x2hs = shl i64 %x2hw, 32
  %x2o = or i64 %x2hs, %x2lw
  %x2d = bitcast i64 %x2o to double
  %r2 = fadd double %r1, %x2d
  %x3b = bitcast double %r2 to i64
  %x3lo = trunc i64 %x3b to i32
  %x3h = lshr i64 %x3b, 32
  %x3hi = trunc i64 %x3h to i32
  %x3lo2 = call i32 @llvm.nvvm.shfl.sync.bfly.i32(i32 -1, i32 %x3lo, i32 4, i32 31)
  %x3hi2 = call i32 @llvm.nvvm.shfl.sync.bfly.i32(i32 -1, i32 %x3hi, i32 4, i32 31)
  %x3lw = zext i32 %x3lo2 to i64
  %x3hw = zext i32 %x3hi2 to i64
  %x3hs = shl i64 %x3hw, 32
  %x3o = or i64 %x3hs, %x3lw
  %x3d = bitcast i64 %x3o to double
  %r3 = fadd double %r2, %x3d
  %x4b = bitcast double %r3 to i64
  %x4lo = trunc i64 %x4b to i32
  %x4h = lshr i64 %x4b, 32
  %x4hi = trunc i64 %x4h to i32
  %x4lo2 = call i32 @llvm.nvvm.shfl.sync.bfly.i32(i32 -1, i32 %x4lo, i32 2, i32 31)
  %x4hi2 = call i32 @llvm.nvvm.shfl.sync.bfly.i32(i32 -1, i32 %x4hi, i32 2, i32 31)
  %x4lw = zext i32 %x4lo2 to i64
  %x4hw = zext i32 %x4hi2 to i64
  %x4hs = shl i64 %x4hw, 32
  %x4o = or i64 %x4hs, %x4lw
  %x4d = bitcast i64 %x4o to double
  %r4 = fadd double %r3, %x4d
  %x5b = bitcast double %r4 to i64
  %x5lo = trunc i64 %x5b to i32
  %x5h = lshr i64 %x5b, 32
  %x5hi = trunc i64 %x5h to i32
  %x5lo2 = call i32 @llvm.nvvm.shfl.sync.bfly.i32(i32 -1, i32 %x5lo, i32 1, i32 31)
  %x5hi2 = call i32 @llvm.nvvm.shfl.sync.bfly.i32(i32 -1, i32 %x5hi, i32 1, i32 31)
  %x5lw = zext i32 %x5lo2 to i64
  %x5hw = zext i32 %x5hi2 to i64
  %x5hs = shl i64 %x5hw, 32
  %x5o = or i64 %x5hs, %x5lw
  %x5d = bitcast i64 %x5o to double
  %r5 = fadd double %r4, %x5d
  %first = icmp eq i32 %lane32, 0
  br i1 %first, label %write, label %exit

write:
  %bp = getelementptr double, double* %b, i64 %row
  %bv = load double, double* %bp, align 8
  %di = add i64 %rowoff, %row
  %dp = getelementptr float, float* %A, i64 %di
  %d = load float, float* %dp, align 4
  %dd = fpext float %d to double
  %num = fsub double %bv, %r5
  %dx = fdiv double %num, %dd
  %xrp = getelementptr double, double* %x, i64 %row
  %xr = load double, double* %xrp, align 8
  %xn = fadd double %xr, %dx
  %xnp = getelementptr double, double* %xnew, i64 %row
  store double %xn, double* %xnp, align 8
  %adx = call double @llvm.fabs.f64(double %dx)
  %old = atomicrmw fadd double* %residual, double %adx monotonic
  br label %exit

exit:
  ret void
}

!nvvm.annotations = !{!0}
!0 = !{void (float*, double*, double*, double*, double*, i64)* @jacobi_f64, !"kernel", i32 1}
