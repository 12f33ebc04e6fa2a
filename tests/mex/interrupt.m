% Run by tests/mex/run_mex_test.sh, which sends SIGINT (Ctrl-C) to octave-cli
% once the first iteration line is printed (opts.display): a CP-ALS or Tucker
% run that would take hours must end with the error
% sptensor:interrupted. Environment:
%   SPT_MEX_DIR  folder with the built sptensor_*.mex files
%   SPT_DATA     the tensor file (nations.tns.xz)
%   SPT_GATEWAY  "cpd" (sptensor_cpd) or "tucker" (sptensor_tucker)
%   SPT_DISPLAY  opts.display (print every N iterations)
addpath(getenv('SPT_MEX_DIR'));
[subs, vals, dims] = sptensor_read(getenv('SPT_DATA'));
every = str2double(getenv('SPT_DISPLAY'));
opts = struct('maxiters', 100000000, 'tol', 0, 'display', every, 'threads', 1);
try
  switch getenv('SPT_GATEWAY')
    case 'cpd'
      [lambda, U, info] = sptensor_cpd(subs, vals, dims, 8, opts);
    case 'tucker'
      [G, U, info] = sptensor_tucker(subs, vals, dims, [3 4 3], opts);
    otherwise
      error('interrupt.m: SPT_GATEWAY must be cpd or tucker');
  end
  printf('not interrupted: %d iterations\n', info.iterations);
catch err
  printf('caught %s: %s\n', err.identifier, err.message);
end
