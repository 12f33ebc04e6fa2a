function varargout = sptensor_cpd(varargin)
%  SPTENSOR_CPD  CP decomposition (CP-ALS) of a sparse tensor with libsptensor.
%
%   [LAMBDA, U, INFO] = sptensor_cpd(SUBS, VALS, DIMS, R)
%   [LAMBDA, U, INFO] = sptensor_cpd(SUBS, VALS, DIMS, R, OPTS)
%
% The tensor: SUBS nnz x N (1-based, double or uint32), VALS nnz x 1 double,
% DIMS 1 x N or [] (largest subscripts). Numerics follow Tensor Toolbox's
% cp_als: X ~ sum_r LAMBDA(r) U{1}(:,r) o U{2}(:,r) o ... o U{N}(:,r).
% LAMBDA: R x 1 (decreasing); U: 1 x N cell of DIMS(n) x R matrices (unit
% columns); INFO: struct with fit, iterations, converged (logical), fits
% (fit after each sweep) and seconds (time of each sweep).
% OPTS (struct, all optional):
%   maxiters  maximum sweeps (default 50)
%   tol       stop when the fit changes by less than tol (default 1e-4)
%   seed      seed of the random initial factors (default 0), the same
%             stream as `sptensor cpd --seed`, so equal seeds give equal
%             results
%   init      1 x N cell of DIMS(n) x R starting factors (read in place)
%   format    'auto' (default), 'coo', 'csf', 'hicoo' or 'fcoo'; 'hbcsf' and
%             'hls' are named but CP-ALS does not run on them
%             (sptensor:SPT_ERR_UNSUPPORTED)
%   threads   OpenMP threads (default: OMP_NUM_THREADS or all cores)
%   display   print the fit every display iterations, as Tensor Toolbox's
%             printitn (default 0: never)
% Reaching maxiters is not an error (INFO.converged is false).
% Ctrl-C (Octave) stops the run within one iteration: sptensor:interrupted.
% Errors: sptensor:usage (bad arguments, an unknown OPTS field, a subscript
% outside DIMS; indices in messages are 1-based), sptensor:interrupted, and
% the sptensor:SPT_ERR_* of spt_cpd_als.
%
%   This file holds only the help text; the function is the compiled MEX
%   file sptensor_cpd.c (docs/mex.md says how to build it).
  error('sptensor:notbuilt', 'sptensor_cpd is a MEX file: build sptensor_cpd.c first (see docs/mex.md)');
end
