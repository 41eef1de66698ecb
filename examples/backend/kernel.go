package main

// saxpyPTX is the step's elementwise kernel, written as PTX by hand and
// embedded in the program, as a backend with no CUDA compiler at build or
// run time does it: the driver compiles it for the device when the module
// loads (its JIT), once. ISA 8.0 (CUDA 12.0 and later drivers) for sm_75
// and later.
//
//	extern "C" __global__ void saxpy(int n, float a, const float *x, float *y)
//	{
//		for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
//			y[i] = a * x[i] + y[i];
//	}
const saxpyPTX = `.version 8.0
.target sm_75
.address_size 64

.visible .entry saxpy(
	.param .u32 saxpy_n,
	.param .f32 saxpy_a,
	.param .u64 saxpy_x,
	.param .u64 saxpy_y
)
{
	.reg .pred 	%p<3>;
	.reg .f32 	%f<5>;
	.reg .b32 	%r<8>;
	.reg .b64 	%rd<8>;

	ld.param.u32 	%r1, [saxpy_n];
	ld.param.f32 	%f1, [saxpy_a];
	ld.param.u64 	%rd1, [saxpy_x];
	ld.param.u64 	%rd2, [saxpy_y];
	cvta.to.global.u64 	%rd3, %rd1;
	cvta.to.global.u64 	%rd4, %rd2;
	mov.u32 	%r2, %ctaid.x;
	mov.u32 	%r3, %ntid.x;
	mov.u32 	%r4, %tid.x;
	mad.lo.s32 	%r5, %r2, %r3, %r4;
	mov.u32 	%r6, %nctaid.x;
	mul.lo.s32 	%r7, %r6, %r3;
	setp.ge.s32 	%p1, %r5, %r1;
	@%p1 bra 	DONE;
LOOP:
	mul.wide.s32 	%rd5, %r5, 4;
	add.s64 	%rd6, %rd3, %rd5;
	add.s64 	%rd7, %rd4, %rd5;
	ld.global.f32 	%f2, [%rd6];
	ld.global.f32 	%f3, [%rd7];
	fma.rn.f32 	%f4, %f1, %f2, %f3;
	st.global.f32 	[%rd7], %f4;
	add.s32 	%r5, %r5, %r7;
	setp.lt.s32 	%p2, %r5, %r1;
	@%p2 bra 	LOOP;
DONE:
	ret;
}
`
