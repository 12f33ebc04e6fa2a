function varargout = sptensor_gcp(varargin)
%  SPTENSOR_GCP  Generalized CP decomposition (GCP-OPT or GCP-SGD) of a sparse tensor with libsptensor.
%
%   [U, INFO] = sptensor_gcp(SUBS, VALS, DIMS, R)
%   [U, INFO] = sptensor_gcp(SUBS, VALS, DIMS, R, OPTS)
%
% The tensor: SUBS nnz x N (1-based, double or uint32), VALS nnz x 1 double,
% DIMS 1 x N or [] (largest subscripts). Minimises the sum over every entry
% of the full tensor (zeros included; at most 1e8 entries) of the loss
% f(x, m), m = sum_r U{1}(:,r) o ... o U{N}(:,r), by L-BFGS-B, with the
% numerics of pyttb gcp_opt (docs/gcp.md). U: 1 x N cell of DIMS(n) x R
% matrices (as optimised, not normalised); INFO: struct with objective,
% iterations, converged (logical), objectives (after each iteration) and
% seconds (since the start, at each iteration).
% OPTS (struct, all optional):
%   loss      'gaussian' (default), 'poisson', 'poisson-log', 'bernoulli'
%             (logit link), 'bernoulli-odds', 'gamma', 'rayleigh', 'huber'
%   huber     the Huber threshold (default 0.25)
%   lower     lower bound on every factor entry (default: the loss's own)
%   maxiters  L-BFGS-B iterations (default 1000)
%   pgtol     projected-gradient tolerance (default 1e-5)
%   seed      seed of the random initial factors (default 0), the stream of
%             `sptensor cpd --model gcp --seed`
%   init      1 x N cell of DIMS(n) x R starting factors (read in place)
%   threads   OpenMP threads (default: OMP_NUM_THREADS or all cores)
%   display   print the objective every display iterations (default 0)
%   optimizer 'lbfgsb' (GCP-OPT, default) or 'sgd' (GCP-SGD: pyttb gcp_opt with
%             Adam, stratified samples of nonzeros and zeros, any tensor size;
%             maxiters = epochs, INFO.objective(s) = the objective estimate,
%             INFO.iterations = epochs; the seed also seeds the samples)
%   rate, epochiters, maxfails   GCP-SGD: Adam learning rate (default 1e-3),
%             steps per epoch (default 1000), failed epochs allowed (default 1)
%   gsamples, fsamples   GCP-SGD: nonzeros and zeros sampled per step / in the
%             objective estimate, that many of each (default pyttb's)
% Reaching maxiters is not an error (INFO.converged is false).
% Ctrl-C (Octave) stops the run within one iteration: sptensor:interrupted.
% Errors: sptensor:usage (bad arguments, an unknown OPTS field), and the
% sptensor:SPT_ERR_* of spt_gcp_opt (e.g. data the loss cannot take).
%
%   This file holds only the help text; the function is the compiled MEX
%   file sptensor_gcp.c (docs/mex.md says how to build it).
  error('sptensor:notbuilt', 'sptensor_gcp is a MEX file: build sptensor_gcp.c first (see docs/mex.md)');
end
