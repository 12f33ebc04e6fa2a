% Run by tests/mex/run_mex_test.sh, which sends SIGINT (Ctrl-C) to octave-cli
% once the first iteration line is printed: a CP-ALS run that would take
% hours must end with the error sptensor:interrupted. Environment:
%   SPT_MEX_DIR  folder with the built sptensor_*.mex files
%   SPT_DATA     the tensor file (nations.tns.xz)
addpath(getenv('SPT_MEX_DIR'));
[subs, vals, dims] = sptensor_read(getenv('SPT_DATA'));
try
  [lambda, U, info] = sptensor_cpd(subs, vals, dims, 8, ...
                                   struct('maxiters', 100000000, 'tol', 0, 'display', 100, 'threads', 1));
  printf('not interrupted: %d iterations\n', info.iterations);
catch err
  printf('caught %s: %s\n', err.identifier, err.message);
end
