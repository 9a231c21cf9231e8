typedef enum { A, B } E;
union U { int i; float f; };
__kernel __attribute__((reqd_work_group_size(64,1,1))) void e(E e, read_only image2d_t img, __global float** pp) {}
