function varargout = sptensor_mttkrp(varargin)
%  SPTENSOR_MTTKRP  Matricized tensor times Khatri-Rao product with libsptensor.
%
%   M = sptensor_mttkrp(SUBS, VALS, DIMS, U, N)
%   M = sptensor_mttkrp(SUBS, VALS, DIMS, U, N, OPTS)
%
% The tensor: SUBS nnz x K (1-based, double or uint32), VALS nnz x 1
% double, DIMS 1 x K or []. U: 1 x K cell of DIMS(k) x R double matrices
% (U{N} is not read and may be []). N: the mode, 1-based.
% M(i, r) = sum over nonzeros with SUBS(:,N) = i of
%           VALS * prod_{k ~= N} U{k}(SUBS(:,k), r),
% i.e. Tensor Toolbox's mttkrp(X, U, N). M is DIMS(N) x R.
% No copies: the factors are read in place and the library writes M
% directly into the returned array (column-major layout flag).
% OPTS (struct, optional): threads.
% Errors: sptensor:usage (bad arguments, a factor of the wrong shape, an
% unknown OPTS field; indices in messages are 1-based) and the
% sptensor:SPT_ERR_* of spt_mttkrp.
%
%   This file holds only the help text; the function is the compiled MEX
%   file sptensor_mttkrp.c (docs/mex.md says how to build it).
  error('sptensor:notbuilt', 'sptensor_mttkrp is a MEX file: build sptensor_mttkrp.c first (see docs/mex.md)');
end
