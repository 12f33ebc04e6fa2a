function varargout = sptensor_read(varargin)
%  SPTENSOR_READ  Read a sparse tensor file with libsptensor.
%
%   [SUBS, VALS, DIMS] = sptensor_read(FILENAME)
%   [SUBS, VALS, DIMS] = sptensor_read(FILENAME, OPTS)
%
% FILENAME: FROSTT .tns (1-based text), extended .tns, SPLATT .bin or
% libsptensor .sptb, optionally gzip/xz/zstd compressed (detected).
% SUBS: nnz x N double, 1-based subscripts; VALS: nnz x 1 double;
% DIMS: 1 x N double. With Tensor Toolbox: X = sptensor(SUBS, VALS, DIMS).
% Nonzeros come in file order; repeated coordinates are kept.
% OPTS (struct, optional): threads (parser threads; default: all cores or
% OMP_NUM_THREADS).
% Errors: sptensor:SPT_ERR_IO (cannot open), sptensor:SPT_ERR_PARSE (the
% message gives FILE:LINE), sptensor:usage.
%
%   This file holds only the help text; the function is the compiled MEX
%   file sptensor_read.c (docs/mex.md says how to build it).
  error('sptensor:notbuilt', 'sptensor_read is a MEX file: build sptensor_read.c first (see docs/mex.md)');
end
