function varargout = sptensor_tucker(varargin)
%  SPTENSOR_TUCKER  Tucker decomposition (HOOI) of a sparse tensor with libsptensor.
%
%   [G, U, INFO] = sptensor_tucker(SUBS, VALS, DIMS, RANKS)
%   [G, U, INFO] = sptensor_tucker(SUBS, VALS, DIMS, RANKS, OPTS)
%
% The tensor: SUBS nnz x N (1-based, double or uint32), VALS nnz x 1 double,
% DIMS 1 x N or []. RANKS: 1 x N core sizes (or one number for every mode).
% Numerics follow Tensor Toolbox's tucker_als: X ~ G x_1 U{1} x_2 U{2} ... x_N U{N}.
% G: RANKS(1) x ... x RANKS(N) double array; U: 1 x N cell of DIMS(n) x
% RANKS(n) matrices with orthonormal columns; INFO: struct with fit,
% iterations, fits (fit after each sweep).
% OPTS (struct, all optional):
%   maxiters  maximum HOOI sweeps (default 50)
%   tol       stop when the fit changes by less than tol (default 1e-4)
%   init      'hosvd' (default, as tucker_als 'nvecs') or 'random'
%   seed      seed for init 'random' (default 0)
%   threads   OpenMP threads (default: OMP_NUM_THREADS or all cores)
%   display   print the fit every display iterations, as Tensor Toolbox's
%             printitn (default 0: never)
% Ctrl-C (Octave) stops the run within one iteration: sptensor:interrupted.
% Errors: sptensor:usage (bad arguments, an unknown OPTS field, a rank above
% its dimension; indices in messages are 1-based), sptensor:interrupted, and
% the sptensor:SPT_ERR_* of spt_tucker_hooi.
%
%   This file holds only the help text; the function is the compiled MEX
%   file sptensor_tucker.c (docs/mex.md says how to build it).
  error('sptensor:notbuilt', 'sptensor_tucker is a MEX file: build sptensor_tucker.c first (see docs/mex.md)');
end
